package engine

import (
	"encoding/base64"
	"strings"
	"testing"

	"github.com/volctl/volctl/internal/csi/csitest"
)

// TestListSnapshotsThroughASocketMateNamesTheIDThatRecordsIt: two plugin IDs registered on one
// socket (one process, one storage) both list the snapshot one of them recorded. Under the
// other ID it was shown as a snapshot volctl does not record (no name, no volume), which its
// delete there was refused for (notMatesSnapshot) without the listing saying why: it names
// the ID that records it, with the record's name and volume.
func TestListSnapshotsThroughASocketMateNamesTheIDThatRecordsIt(t *testing.T) {
	t.Parallel()
	h, _ := snapshotHarness(t, nil)
	snap := h.snapshot("nightly")
	h.registerPlugin("mem2", h.socket)

	for _, id := range []string{"mem2", ""} {
		list, err := h.e.ListSnapshots(h.ctx, id, nil)
		if err != nil {
			t.Fatal(err)
		}
		var under []SnapshotInfo
		for _, s := range list.Snapshots {
			if s.ID == snap.ID {
				under = append(under, s)
			}
		}
		for _, s := range under {
			switch s.PluginID {
			case "mem":
				if !s.Recorded || s.RecordedBy != "" {
					t.Errorf("list %q: under the ID that records it: %+v", id, s)
				}
			case "mem2":
				if s.Recorded || s.RecordedBy != "mem" || s.Name != "nightly" || s.SourceVolumeID != "db" || !s.Listed {
					t.Errorf("list %q: under its socket mate the snapshot is %+v, want it listed, not recorded by mem2, recorded by mem as nightly of db", id, s)
				}
			default:
				t.Errorf("list %q: under plugin %q: %+v", id, s.PluginID, s)
			}
		}
		if want := map[string]int{"mem2": 1, "": 2}[id]; len(under) != want {
			t.Errorf("list %q: snapshot %q shown %d times, want %d: %+v", id, snap.ID, len(under), want, under)
		}
	}
}

// A plugin restarted as another version of its driver (GetPluginInfo's vendor_version: an
// upgrade, a downgrade, another build on the socket) while volumes are claimed through it,
// with the same capabilities: the new version is recorded, and the plugin-capabilities event
// that a restart with other capabilities or node limits gets says so, naming both. Before,
// the record was overwritten in silence: nothing in the event log said the driver under the
// claims had changed, nor when. The version is the plugin's word, and is quoted.
func TestPluginRestartedAsAnotherVersionIsAnEvent(t *testing.T) {
	t.Parallel()
	h := newHarness(t, nil)
	h.create(volume("v"))
	h.claim(ClaimRequest{VolumeID: "v", Alloc: "a"})

	h.restartWith(func(c *csitest.MemConfig) { c.Version = "2.0.0-rc1\x1b[2J" })
	evs := h.capabilityEventsSeenByAProbe()
	if len(evs) != 1 {
		t.Fatalf("plugin-capabilities events after a restart as another version = %+v; want one", evs)
	}
	for _, want := range []string{`plugin "mem" came back`, `"2.0.0-rc1\x1b[2J"`, `"1.0.0"`} {
		if !strings.Contains(evs[0].Message, want) {
			t.Errorf("the event %q does not say %s", evs[0].Message, want)
		}
	}
	if strings.Contains(evs[0].Message, "\x1b") {
		t.Errorf("the event %q carries the plugin's control characters as they are", evs[0].Message)
	}
	// The same version again says nothing more.
	h.restartWith(func(*csitest.MemConfig) {})
	if evs := h.capabilityEventsSeenByAProbe(); len(evs) != 1 {
		t.Errorf("plugin-capabilities events after a restart as the same version = %+v; want still one", evs)
	}
}

// TestWrappedEchoedSecretsScrubbedOnEveryPath is TestEchoedSecretsScrubbedOnEveryPath with a
// plugin that echoes every value also as base64 broken into lines, as MIME, PEM, openssl and
// Python's base64.encodebytes write it (at 76 or 64 columns; 16 here, for values this short),
// as a quoted dump writes those breaks (\n), and indented as YAML is. The quoted forms are
// also how an error shows the others (its control characters escaped after the scrub). Before,
// base64 was looked for unbroken only: every path showed each value's lines.
func TestWrappedEchoedSecretsScrubbedOnEveryPath(t *testing.T) {
	t.Parallel()
	wrapped := func(enc *base64.Encoding, prefix, sep string) func(string) string {
		return func(s string) string {
			b64 := enc.EncodeToString([]byte(prefix + s))
			var lines []string
			for len(b64) > 16 {
				lines, b64 = append(lines, b64[:16]), b64[16:]
			}
			return strings.Join(append(lines, b64), sep)
		}
	}
	encodings := map[string]func(string) string{
		"MIME":          wrapped(base64.StdEncoding, "", "\r\n"),
		"PEM":           wrapped(base64.StdEncoding, "", "\n"),
		"URL alphabet":  wrapped(base64.URLEncoding, "", "\n"),
		"quoted dump":   wrapped(base64.StdEncoding, "", `\n`),
		"quoted MIME":   wrapped(base64.StdEncoding, "", `\r\n`),
		"YAML":          wrapped(base64.StdEncoding, "", "\n    "),
		"quoted YAML":   wrapped(base64.StdEncoding, "", `\n    `),
		"basic auth us": wrapped(base64.StdEncoding, "us:", "\n"),
		// A bare carriage return: a terminal draws the next line over the last, but the event
		// log, --json and a log file carry it, read a line after another (scrub36).
		"bare CR":        wrapped(base64.StdEncoding, "", "\r"),
		"quoted bare CR": wrapped(base64.StdEncoding, "", `\r`),
	}
	echoedSecretsScrubbed(t, echoSentinels{secret: "echo-secret@7f3a/x y+z?", volFlag: "volflag:7f3a/p@ss=?",
		claimFlag: "claimflag 7f3a+q@r", other: "other-volume-secret/7f3a:s@t"}, encodings)
}
