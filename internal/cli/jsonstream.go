package cli

import (
	"bufio"
	"context"
	"strconv"
	"time"

	"github.com/volctl/volctl/internal/engine"
)

// writeVolumeListJSON streams `volume status --json`: each volume is appended to out as its
// row is read, byte for byte what writeJSON prints for the whole []engine.VolumeSummary
// (TestVolumeListJSONStreamMatchesEncoder), without building the list, reflecting over each
// field or indenting the output in a second pass.
//
// The list is built as bytes and written once it is read whole: a read that fails half-way
// (a row met damaged, an interrupt) prints nothing, as docs/json.md promises of a command that
// fails. Before, each row went to out as it was read, and out's buffer, flushed every 64 KiB
// and at the command's end, left the list cut short on stdout
// (TestVolumeListJSONFailingHalfWayPrintsNothing). The bytes are kept in chunks of 64 KiB, not
// one slice grown: growing one copied the list again at each doubling, onto pages fresh from
// the kernel, and took the command from 1.5 to 3 times its bare-SQL floor (BENCHMARKS.md,
// round 63); the chunks touch each page once.
func writeVolumeListJSON(ctx context.Context, out *bufio.Writer, e *engine.Engine, each func(*engine.VolumeSummary)) error {
	return streamVolumeListJSON(out, func(fn func(*engine.VolumeSummary) error) error {
		return e.EachVolumeShown(ctx, engine.AllVolumeFields, func(v *engine.VolumeSummary) error {
			each(v)
			return fn(v)
		})
	})
}

// streamVolumeListJSON writes the volumes each yields as writeJSON would the whole list.
func streamVolumeListJSON(out *bufio.Writer, each func(func(*engine.VolumeSummary) error) error) error {
	var chunks [][]byte
	buf := make([]byte, 0, 64<<10)
	n := 0
	err := each(func(v *engine.VolumeSummary) error {
		if len(buf) > cap(buf)-2048 { // a row is some 330 bytes; a longer one grows the chunk
			chunks = append(chunks, buf)
			buf = make([]byte, 0, 64<<10)
		}
		if n == 0 {
			buf = append(buf, "[\n"...)
		} else {
			buf = append(buf, ",\n"...)
		}
		n++
		buf = appendVolumeSummaryJSON(buf, v)
		return nil
	})
	if err != nil {
		return err
	}
	if n == 0 {
		buf = append(buf, "[]\n"...)
	} else {
		buf = append(buf, "\n]\n"...)
	}
	for _, c := range append(chunks, buf) {
		if _, err := out.Write(c); err != nil {
			return err
		}
	}
	return nil
}

// appendVolumeSummaryJSON appends v as writeJSON indents an element of a top-level array.
// Keep it in step with engine.VolumeSummary's JSON tags (the test compares the two).
func appendVolumeSummaryJSON(b []byte, v *engine.VolumeSummary) []byte {
	b = append(b, "  {\n    \"id\": "...)
	b = appendJSONString(b, v.ID)
	b = append(b, ",\n    \"namespace\": "...)
	b = appendJSONString(b, v.Namespace)
	b = append(b, ",\n    \"name\": "...)
	b = appendJSONString(b, v.Name)
	b = append(b, ",\n    \"plugin_id\": "...)
	b = appendJSONString(b, v.PluginID)
	b = append(b, ",\n    \"state\": "...)
	b = appendJSONString(b, v.State)
	b = append(b, ",\n    \"schedulable\": "...)
	b = strconv.AppendBool(b, v.Schedulable)
	if v.AccessMode != "" {
		b = append(b, ",\n    \"access_mode\": "...)
		b = appendJSONString(b, string(v.AccessMode))
	}
	if v.AttachmentMode != "" {
		b = append(b, ",\n    \"attachment_mode\": "...)
		b = appendJSONString(b, string(v.AttachmentMode))
	}
	b = append(b, ",\n    \"capacity_bytes\": "...)
	b = strconv.AppendInt(b, v.CapacityBytes, 10)
	b = append(b, ",\n    \"read_claims\": "...)
	b = strconv.AppendInt(b, int64(v.ReadClaims), 10)
	b = append(b, ",\n    \"write_claims\": "...)
	b = strconv.AppendInt(b, int64(v.WriteClaims), 10)
	b = append(b, ",\n    \"unsettled_claims\": "...)
	b = strconv.AppendInt(b, int64(v.Unsettled), 10)
	// As time.Time's MarshalJSON writes it: RFC 3339 with nanoseconds, for the years it takes
	// (the store's times, in int64 nanoseconds, are 1678 to 2262).
	b = append(b, ",\n    \"created_at\": \""...)
	b = v.CreatedAt.AppendFormat(b, time.RFC3339Nano)
	return append(b, "\"\n  }"...)
}

// appendJSONString appends s quoted as marshalJSON quotes it. IDs, names and modes are
// printable ASCII nearly always, and are copied between quotes as they are; anything else (a
// quote, a backslash, a control character or DEL, non-ASCII, invalid UTF-8) goes through
// marshalJSON itself, so the two can never differ.
func appendJSONString(b []byte, s string) []byte {
	for i := 0; i < len(s); i++ {
		if c := s[i]; c < 0x20 || c == '"' || c == '\\' || c >= 0x7f {
			return appendJSONStringSlow(b, s)
		}
	}
	b = append(b, '"')
	b = append(b, s...)
	return append(b, '"')
}

func appendJSONStringSlow(b []byte, s string) []byte {
	q, err := marshalJSON(s, false)
	if err != nil { // a string always encodes
		panic(err)
	}
	return append(b, q[:len(q)-1]...) // it ends with a newline
}
