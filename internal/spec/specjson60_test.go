package spec

import (
	"strings"
	"testing"

	"github.com/hashicorp/hcl/v2"
)

// jsonVolume60 is a JSON volume spec whose parameters are written out by extra.
func jsonVolume60(extra string) string {
	return "{\n  \"id\": \"db\",\n  \"type\": \"csi\",\n  \"plugin_id\": \"ebs\",\n" +
		"  \"capability\": [{\"access_mode\": \"single-node-writer\", \"attachment_mode\": \"file-system\"}],\n" +
		extra + "\n}\n"
}

// A JSON string escape of a lone UTF-16 surrogate ("\ud800") holds no character: it is
// refused at its line, as the native form of the same escape is ("Invalid escape sequence"),
// and as Nomad's CLI cannot read it (its HCL1 JSON reader unquotes with strconv.Unquote, which
// refuses it). Before, volctl's JSON reader made it U+FFFD without a word, so a secret or
// parameter other than the file's was sent to the plugin, as a byte that is not UTF-8 was
// before invalidUTF8. Found by helper review60.
func TestJSONLoneSurrogateEscapeIsRefused(t *testing.T) {
	_, native := ParseVolume("v.hcl", []byte(baseVolume+"parameters { p = \"ab\\ud800cd\" }\n"), VerbAny)
	if !native.HasErrors() {
		t.Fatalf("the native form was read: %v", native)
	}
	for _, field := range []string{"parameters", "secrets", "context"} {
		t.Run(field, func(t *testing.T) {
			src := jsonVolume60("  \"" + field + "\": {\"p\": \"ab\\ud800cd\"}")
			v, diags := ParseVolume("v.json", []byte(src), VerbAny)
			if !diags.HasErrors() {
				var got map[string]string
				switch field {
				case "parameters":
					got = v.Parameters
				case "context":
					got = v.Context
				case "secrets":
					got = map[string]string{"p": strings.Repeat("?", len(v.Secrets["p"]))}
				}
				t.Fatalf("%s.p, the escape of a lone surrogate the native form refuses (%v), was read without an error as %q (U+FFFD); diagnostics: %v",
					field, native[0].Summary, got["p"], diags)
			}
			for _, d := range diags {
				if d.Severity == hcl.DiagError && (d.Subject == nil || d.Subject.Start.Line != 6) {
					t.Errorf("error not at the value's line 6: %v", d)
				}
			}
		})
	}
}

// volctl's own plugin reads a mount flag with its blanks trimmed (hostpath parseMountFlags:
// " ro" and "ro " are MS_RDONLY), so such a flag mounts a write claim read-only just as "ro"
// does, and validate warns of it as of "ro" ("Read-only mount flag",
// TestReadOnlyMountFlagOnAWritableVolumeIsWarnedOf; spec.ReadOnlyFlag, which volume claim's
// --mount-flag warning uses too). Before, the padded flag, as pasted, was not warned of:
// validate said valid, and the writer could not write.
func TestPaddedReadOnlyMountFlagIsWarnedOf(t *testing.T) {
	for _, flag := range []string{`"ro "`, `" ro"`, `"\tro"`} {
		t.Run(flag, func(t *testing.T) { readOnlyFlagWarned(t, "noatime", flag) })
	}
}

// readOnlyFlagWarned parses a single-node-writer volume whose mount_flags are other (as a
// string) and flag (written as HCL), and fails the test unless validate warns of flag as a
// read-only mount flag, once.
func readOnlyFlagWarned(t *testing.T, other, flag string) {
	t.Helper()
	src := "id = \"v\"\nname = \"v\"\ntype = \"csi\"\nplugin_id = \"p\"\n" +
		"capability {\n  access_mode = \"single-node-writer\"\n  attachment_mode = \"file-system\"\n}\n" +
		"mount_options {\n  mount_flags = [\"" + other + "\", " + flag + "]\n}\n"
	v, diags := ParseVolume("v.hcl", []byte(src), VerbAny)
	if diags.HasErrors() {
		t.Fatalf("%v", diags)
	}
	if len(diagsNamed(diags, "Read-only mount flag")) != 1 {
		t.Errorf("mount flag %s on a single-node-writer volume (%d flags read) mounts it read-only in volctl's plugin, and was not warned of: %v",
			flag, len(v.MountOptions.MountFlags), diags)
	}
}

// What is not half a pair is read as it was: an escaped backslash before "ud800" (text, not an
// escape), and the character a pair's two escapes stand for, written as itself. (The pair's
// escapes, which Nomad's CLI cannot read, are refused since round 63:
// TestJSONSurrogatePairEscapeIsRefused.)
func TestJSONSurrogatePairAndEscapedBackslashAreRead(t *testing.T) {
	for value, want := range map[string]string{"ab\U0001F600cd": "ab\U0001F600cd", `ab\\ud800cd`: `ab\ud800cd`} {
		v, diags := ParseVolume("v.json", []byte(jsonVolume60(`  "parameters": {"p": "`+value+`"}`)), VerbAny)
		if diags.HasErrors() || v.Parameters["p"] != want {
			t.Errorf("JSON value %s: read as %q, %v; want %q", value, v.Parameters["p"], diags, want)
		}
	}
}

// A mount flag holding others joined by commas ("noatime,ro"), as mount(8) reads the -o a
// plugin joins its flags into and as volctl's plugin reads it, mounts a write claim read-only
// as "ro" does: warned of as "ro" is. Before, spec.ReadOnlyFlag compared the whole flag with
// "ro": validate said valid, and the writer could not write (and checkTarget refused a write
// claim whose own flag asked for it so).
func TestCommaJoinedReadOnlyFlagIsRead(t *testing.T) {
	for _, flag := range []string{`"noatime,ro"`, `"ro,noatime"`, `"nodev, ro ,nosuid"`} {
		t.Run(flag, func(t *testing.T) { readOnlyFlagWarned(t, "noexec", flag) })
	}
	for _, flag := range []string{"noatime,rox", "errors=remount-ro", "ro=1,x", "ro,rw", "ro ,, rw"} {
		if i := ReadOnlyFlag([]string{flag}); i >= 0 {
			t.Errorf("ReadOnlyFlag(%q) = %d; no word of it is \"ro\", or a later \"rw\" undoes it, as in mount(8)", flag, i)
		}
	}
	for _, tc := range []struct {
		flags []string
		want  int
	}{{[]string{"ro", "rw"}, -1}, {[]string{"rw", "ro"}, 1}, {[]string{"ro", "rw,ro", "nodev"}, 1}, {[]string{"noatime,ro,"}, 0}} {
		if i := ReadOnlyFlag(tc.flags); i != tc.want {
			t.Errorf("ReadOnlyFlag(%q) = %d, want %d (the last of ro and rw wins, as in mount(8))", tc.flags, i, tc.want)
		}
	}
}
