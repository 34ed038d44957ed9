package spec

import (
	"strings"
	"testing"

	"github.com/hashicorp/hcl/v2"
)

// A secret value or mount flag that is the placeholder with a blank about it (pasted from an
// export) is refused as the placeholder is; one that is another tool's spelling of a hidden
// value ("<redacted>", as Nomad's agent shows its tokens; "[redacted]", as nomad operator
// debug writes flags; "[ REDACTED ]") gets a warning naming the secret or flag, never its
// value, and is taken (it may be the real value). Before, each was taken without a word and
// given to the plugin as the credential or mount flag.
func TestPlaceholderSpellingsAreNamed(t *testing.T) {
	spec := func(secret, flag string) []byte {
		return []byte(`id = "db"
name = "db"
type = "csi"
plugin_id = "hostpath"
external_id = "ext-1"
capability {
  access_mode     = "single-node-writer"
  attachment_mode = "file-system"
}
mount_options {
  mount_flags = ["noatime", "` + flag + `"]
}
secrets { token = "` + secret + `" }
`)
	}
	for _, c := range []struct {
		value   string
		refused bool
	}{
		{" " + Redacted, true},
		{Redacted + " ", true},
		{"<redacted>", false},
		{"[redacted]", false},
		{"[ REDACTED ]", false},
		{"<REDACTED>", false},
		{"redacted", false},
	} {
		v, diags := NewParser().ParseVolume("db.hcl", spec(c.value, c.value), VerbRegister)
		var errs, warns []string
		for _, d := range diags {
			switch {
			case d.Severity == hcl.DiagError:
				errs = append(errs, d.Summary+": "+d.Detail)
			case d.Summary == PlaceholderSpellingSummary:
				warns = append(warns, d.Detail)
			}
		}
		all := strings.Join(append(errs, warns...), "\n")
		for _, want := range []string{`secret "token"`, "mount_flags[1]"} {
			if !strings.Contains(all, want) {
				t.Errorf("value %q: the diagnostics do not name %s:\n%s", c.value, want, all)
			}
		}
		if c.refused && (len(errs) != 2 || len(warns) != 0) {
			t.Errorf("value %q: want the secret and the flag refused as the placeholder, got errors %q, warnings %q", c.value, errs, warns)
		}
		if c.refused && (!strings.Contains(all, "secret value whose real value is this text") || !strings.Contains(all, "change it where the storage keeps it")) {
			// A secret that really is "[REDACTED]": the refusal says what to do then too.
			t.Errorf("value %q: the refusal does not say what to do when it is the real value:\n%s", c.value, all)
		}
		if !c.refused {
			if len(errs) != 0 || len(warns) != 2 {
				t.Errorf("value %q: want a warning each for the secret and the flag, no error; got errors %q, warnings %q", c.value, errs, warns)
			}
			if strings.Contains(all, c.value) {
				t.Errorf("value %q: a warning shows the value:\n%s", c.value, all)
			}
			if v.Secrets.Plain()["token"] != c.value || v.MountOptions.MountFlags.Plain()[1] != c.value {
				t.Errorf("value %q: not taken as written", c.value)
			}
		}
	}
	// Words that merely hold it are values, with no warning.
	for _, value := range []string{"redacted-token-9", "[redacted]x", "noredacted"} {
		_, diags := NewParser().ParseVolume("db.hcl", spec(value, value), VerbRegister)
		for _, d := range diags {
			if d.Summary == PlaceholderSpellingSummary || d.Summary == PlaceholderSummary {
				t.Errorf("value %q: %s: %s", value, d.Summary, d.Detail)
			}
		}
	}
}
