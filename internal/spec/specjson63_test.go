package spec

import (
	"strings"
	"testing"

	"github.com/hashicorp/hcl/v2"
)

// diagsOnLine is the diagnostics, of any severity, whose subject starts on line.
func diagsOnLine(diags hcl.Diagnostics, line int) hcl.Diagnostics {
	var out hcl.Diagnostics
	for _, d := range diags {
		if d.Subject != nil && d.Subject.Start.Line == line {
			out = append(out, d)
		}
	}
	return out
}

// A JSON string escape of a character past U+FFFF as a UTF-16 surrogate pair
// ("\ud83d\ude00", as Python's json.dumps writes an emoji by default) is one Nomad's CLI
// cannot read: its HCL1 JSON reader unquotes each string with strconv.Unquote, which refuses
// a surrogate's \u escape, and hcl/token.Token.Value panics on the error, so
// `nomad volume register vol.json` crashes with a stack trace. volctl reads the file without a
// word, and the error it gives a lone surrogate ("Invalid escape sequence", loneSurrogates)
// advised writing exactly this pair. Nomad's CLI does read the character written raw, and so
// does volctl. Before, volctl read the pair without a word; it is refused now ("Escape Nomad
// cannot read", nomadEscapes), as "\/" is below. Found by helper review63.
func TestJSONSurrogatePairEscapeIsRefused(t *testing.T) {
	for _, field := range []string{"parameters", "secrets"} {
		t.Run(field, func(t *testing.T) {
			src := jsonVolume60("  \"" + field + "\": {\"p\": \"ab\\ud83d\\ude00cd\"}")
			_, diags := ParseVolume("v.json", []byte(src), VerbAny)
			if d := diagsOnLine(diagsNamed(diags, "Escape Nomad cannot read"), 6); len(d) != 1 || d[0].Severity != hcl.DiagError || !strings.Contains(d[0].Detail, "U+1F600") {
				t.Errorf("%s.p is written with a surrogate pair escape (\\ud83d\\ude00), which Nomad's CLI cannot read "+
					"(strconv.Unquote refuses it, and its HCL1 token reader panics), and volctl read it without a word on line 6: %v", field, diags)
			}
		})
	}
	t.Run("lone surrogate advice", func(t *testing.T) {
		src := jsonVolume60("  \"parameters\": {\"p\": \"ab\\ud800cd\"}")
		_, diags := ParseVolume("v.json", []byte(src), VerbAny)
		found := false
		for _, d := range diagsNamed(diags, "Invalid escape sequence") {
			found = true
			if strings.Contains(d.Detail, `\ud83d\ude00`) || strings.Contains(d.Detail, "escapes of both halves") {
				t.Errorf("the error for a lone surrogate advises writing a surrogate pair escape, which Nomad's CLI cannot read "+
					"(it panics in strconv.Unquote's error path): %q", d.Detail)
			}
		}
		if !found {
			t.Fatalf("no \"Invalid escape sequence\" error for a lone surrogate: %v", diags)
		}
	})
}

// JSON allows "\/" for "/" (PHP's json_encode writes every slash so), but Nomad's HCL1 JSON
// scanner does not: `nomad volume register` refuses the file ("illegal char escape"). volctl read
// it as "/" without a word, so `volctl validate` passes a volume spec Nomad refuses, where
// volctl otherwise refuses what Nomad's reader cannot read (a byte order mark, a lone surrogate
// escape, "08") or documents the difference. Found by helper review63.
func TestJSONEscapedSlashIsRefused(t *testing.T) {
	for _, extra := range []string{
		`  "external_id": "projects\/p\/disks\/d"`,
		`  "parameters": {"path": "\/srv\/data"}`,
	} {
		t.Run(extra, func(t *testing.T) {
			src := jsonVolume60(extra)
			_, diags := ParseVolume("v.json", []byte(src), VerbAny)
			if d := diagsOnLine(diagsNamed(diags, "Escape Nomad cannot read"), 6); len(d) != 1 || d[0].Severity != hcl.DiagError {
				t.Errorf("%s: an escaped slash, which Nomad's HCL1 JSON scanner refuses (\"illegal char escape\"), was read without a word on line 6: %v",
					strings.TrimSpace(extra), diags)
			}
		})
	}
}

// Nomad's HCL1 JSON parser drops a bool from a list without a word (json/parser listType:
// "case token.BOOL: // TODO ... not supported by HCL yet"), so `"mount_flags": ["noatime", true]`
// is sent by `nomad volume register` as ["noatime"]. volctl read it as ["noatime", "true"] and
// said nothing, so the plugin got a mount flag Nomad never sends for the same file. (In the
// native form both read `true` as "true".) Refused now ("Value Nomad drops"). Found by helper
// review63.
func TestJSONBoolInMountFlagsIsRefused(t *testing.T) {
	src := jsonVolume60(`  "mount_options": {"mount_flags": ["noatime", true]}`)
	v, diags := ParseVolume("v.json", []byte(src), VerbAny)
	if d := diagsOnLine(diagsNamed(diags, "Value Nomad drops"), 6); len(d) == 1 && d[0].Severity == hcl.DiagError {
		return // refused
	}
	if v == nil || v.MountOptions == nil {
		t.Fatalf("no mount options read: %v", diags)
	}
	if got := v.MountOptions.MountFlags.Plain(); len(got) != 1 || got[0] != "noatime" {
		t.Errorf("mount_flags [\"noatime\", true] in JSON: Nomad's HCL1 JSON reader drops the bool and sends [noatime]; "+
			"volctl sends %d flags (%q) without a word", len(got), got)
	}
}
