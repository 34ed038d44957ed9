package spec

import (
	"strings"
	"testing"
	"unicode"

	"github.com/hashicorp/hcl/v2"
)

func TestValidateID(t *testing.T) {
	tests := []struct {
		id      string
		wantErr string // "" for valid
	}{
		{"db", ""},
		{"web[0]", ""},
		{"mysql[12]", ""},
		{"ebs_prod_db1", ""},
		{"a.b-c_d", ""},
		{"a..b", ""}, // one path element; cannot climb
		{"...", ""},
		{"VOLUME_NAME", ""},
		{"café", ""},
		{strings.Repeat("a", MaxIDLength), ""},
		{"", "must not be empty"},
		{".", "not allowed"},
		{"..", "not allowed"},
		{"../etc", `must not contain "/"`},
		{"a/b", `must not contain "/"`},
		{"/", `must not contain "/"`},
		{"-rf", `must not start with "-"`},
		{"--help", `must not start with "-"`},
		{"a\x00b", "control characters"},
		{"a\nb", "control characters"},
		{"tab\there", "control characters"},
		{"a\u0085b", "control characters"},
		{"\xff\xfe", "not valid UTF-8"},
		{strings.Repeat("a", MaxIDLength+1), "the limit is 128"},
	}
	for _, tt := range tests {
		t.Run(tt.id, func(t *testing.T) {
			err := ValidateID("volume ID", tt.id)
			if tt.wantErr == "" {
				if err != nil {
					t.Fatalf("ValidateID(%q) = %v, want nil", tt.id, err)
				}
				return
			}
			if err == nil || !strings.Contains(err.Error(), tt.wantErr) {
				t.Fatalf("ValidateID(%q) = %v, want an error containing %q", tt.id, err, tt.wantErr)
			}
			if !strings.HasPrefix(err.Error(), "volume ID") {
				t.Errorf("error %q does not name what was checked", err)
			}
		})
	}
}

func TestAllocNamesAreValidIDs(t *testing.T) {
	for i := 0; i < 3; i++ {
		if err := ValidateID("alloc name", AllocName("web", i)); err != nil {
			t.Errorf("%s: %v", AllocName("web", i), err)
		}
	}
}

// TestValidateNewIDRefusesWhatCannotBeSeen: an ID volctl is about to make (a volume's id or
// namespace, a plugin, group or alloc name) must look like itself on screen. A format character
// (a zero width space, a byte order mark, a bidi override that lays the rest of the line out
// right to left), a space other than U+0020, a combining mark with no character before it and a
// space at either end (hidden by a table's padding) would let "db" and "d\u200bb", or an alloc and another's name written backwards, read alike
// in every table. Each is refused, naming its code point; what ValidateID refuses still is.
func TestValidateNewIDRefusesWhatCannotBeSeen(t *testing.T) {
	for _, tt := range []struct{ id, want string }{
		{"d\u200bb", "U+200B"},       // zero width space
		{"\ufeffdb", "U+FEFF"},       // byte order mark
		{"web\u202e0-bew", "U+202E"}, // right-to-left override
		{"a\u2066b\u2069", "U+2066"}, // left-to-right isolate
		{"db\u00ad", "U+00AD"},       // soft hyphen
		{"d\u200db", "U+200D"},       // zero width joiner
		{"web\u00a00", "U+00A0"},     // no-break space
		{"a\u3000b", "U+3000"},       // ideographic space
		{"a\u2028b", "U+2028"},       // line separator
		{"\u0301db", "U+0301"},       // combining acute accent with nothing under it
		{"v1 ", `reads as "v1"`},     // a trailing space, which a table's padding hides
		{" v1", "start or end with a space"},
		{" ", "start or end with a space"},
		{"../x", `must not contain "/"`}, // ValidateID's rules hold
		{"a\x00b", "control characters"}, // so
	} {
		err := ValidateNewID("volume ID", tt.id)
		if err == nil || !strings.Contains(err.Error(), tt.want) || !strings.HasPrefix(err.Error(), "volume ID ") {
			t.Errorf("ValidateNewID(%+q) = %v, want an error naming the volume ID and %s", tt.id, err, tt.want)
		}
		if err != nil && strings.ContainsFunc(err.Error(), func(r rune) bool { return unicode.Is(unicode.Cf, r) }) {
			t.Errorf("ValidateNewID(%+q): the error holds the format character raw: %+q", tt.id, err)
		}
	}
	for _, id := range []string{"db", "v 1", "café", "cafe\u0301", "Nguyễn", "日本-0", "web[0]", "😀", "👍🏽", "a\u0308"} {
		if err := ValidateNewID("volume ID", id); err != nil {
			t.Errorf("ValidateNewID(%+q) = %v, want nil: it shows as it is", id, err)
		}
	}
}

// TestValidateNewIDRefusesMixedScripts: an ID whose letters mix Latin with a script whose
// letters look like Latin ones ("dЬ", "pаypal" with a Cyrillic а, "αpi" with a Greek α) reads
// as another ID in every table; it is refused naming both letters, and an ID of one script, or
// of Latin with the scripts Japanese, Chinese and Korean write beside it, is taken. What is
// stored already is still found: ValidateID, which lookups keep, takes it.
func TestValidateNewIDRefusesMixedScripts(t *testing.T) {
	for _, tt := range []struct{ id, want string }{
		{"d\u042c", `the Latin letter 'd' (U+0064) with the Cyrillic letter 'Ь' (U+042C)`},
		{"p\u0430ypal", "U+0430"},
		{"\u03b1pi-0", "the Greek letter 'α' (U+03B1) with the Latin letter 'p'"},
		{"db-\u0501", "U+0501"},
		{"\u65e5\uac00\u3042", "Hangul"}, // Han, Hangul, Hiragana: no one script writes them all
	} {
		err := ValidateNewID("volume ID", tt.id)
		if err == nil || !strings.Contains(err.Error(), tt.want) || !strings.Contains(err.Error(), "volume ID") {
			t.Errorf("ValidateNewID(%+q) = %v, want an error naming the volume ID and %s", tt.id, err, tt.want)
		}
		if err := ValidateID("volume ID", tt.id); err != nil {
			t.Errorf("ValidateID(%+q) = %v: a stored ID must still be found", tt.id, err)
		}
	}
	for _, id := range []string{"db", "сс", "данные-1", "βάση", "日本-0", "web日本", "データ-db", "한국db", "中文ㄅ", "v1.2_3", "Nguyễn", "cafe\u0301"} {
		if err := ValidateNewID("volume ID", id); err != nil {
			t.Errorf("ValidateNewID(%+q) = %v, want nil: one script, or scripts written together", id, err)
		}
	}
}

// TestSpecIDsThatCannotBeSeenAreRefused: the spec files' IDs volctl makes (a volume's id and
// namespace, a plugin's label, a group's name) are refused with a diagnostic at the value that
// names the character's code point; the IDs a spec refers to (plugin_id, a group volume's
// source) name what may already be stored and pass ValidateID's rules alone.
func TestSpecIDsThatCannotBeSeenAreRefused(t *testing.T) {
	vol := func(id, ns, plugin string) string {
		return `id = "` + id + `"
namespace = "` + ns + `"
type = "csi"
plugin_id = "` + plugin + `"
external_id = "e"
capability {
  access_mode = "single-node-writer"
  attachment_mode = "file-system"
}
`
	}
	check := func(what string, diags hcl.Diagnostics, want string) {
		t.Helper()
		if want == "" {
			if diags.HasErrors() {
				t.Errorf("%s: %v, want it read", what, diags)
			}
			return
		}
		if !diags.HasErrors() || !strings.Contains(diags.Error(), want) || diags[0].Subject == nil || diags[0].Subject.Start.Line == 0 {
			t.Errorf("%s: %v, want an error at the value naming %s", what, diags, want)
		}
	}
	_, d := ParseVolume("v.hcl", []byte(vol("d\u200bb", "default", "p")), VerbRegister)
	check("volume id with U+200B", d, "U+200B")
	_, d = ParseVolume("v.hcl", []byte(vol("db", "prod\u202e", "p")), VerbRegister)
	check("namespace with U+202E", d, "U+202E")
	_, d = ParseVolume("v.hcl", []byte(vol("db", "default", "p\u200b")), VerbRegister)
	check("plugin_id with U+200B (a reference)", d, "")
	p := NewParser()
	_, d = p.ParsePlugins("p.hcl", []byte("plugin \"h\ufeffp\" {\n  type = \"monolith\"\n  socket = \"/run/p.sock\"\n}\n"))
	check("plugin label with U+FEFF", d, "U+FEFF")
	_, d = p.ParseGroup("g.hcl", []byte(strings.Replace(groupSpec, `"web"`, "\"w\u00a0eb\"", 1)))
	check("group name with U+00A0", d, "U+00A0")
	if err := (&Plugin{ID: "p\u2066", Type: PluginMonolith, Socket: "/run/p.sock"}).Validate(); err == nil || !strings.Contains(err.Error(), "U+2066") {
		t.Errorf("plugin register --id with U+2066: %v, want it refused naming U+2066", err)
	}
	_, d = p.ParseGroup("g2.hcl", []byte(strings.Replace(groupSpec, `"db"`, "\"d\u200bb\"", 1)))
	check("group volume source with U+200B (a reference)", d, "")
}
