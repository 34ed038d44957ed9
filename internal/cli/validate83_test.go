package cli

import (
	"strings"
	"testing"
)

// TestJSONReadFileHoldingHCLSecretsDoesNotShowThem: a file read as JSON (one starting with
// `{`, whatever its name, as Nomad's reader picks; a .json file starting with `[`, a number or
// `-`) that holds HCL after that start (a broken file, an HCL spec with a brace pasted before
// it) was masked by JSON's rules alone, which see `"secrets": ...` and not HCL's
// `secrets = { k = "v" }`: its error's snippet showed the secret. It is masked by HCL's rules
// too.
func TestJSONReadFileHoldingHCLSecretsDoesNotShowThem(t *testing.T) {
	for _, c := range []struct{ name, src string }{
		{"db.hcl", "{\n  \"id\": \"db\",\n  secrets = { password = \"hunter2\" }\n}\n"},
		{"db.json", "{\n  \"id\": \"db\",\n  secrets = { password = \"hunter2\" }\n}\n"},
		{"db.json", "[ secrets { password = \"hunter2\" } ]\n"},
		{"db.json", "1\nsecrets { password = \"hunter2\" }\n"},
		{"db.json", "-secrets { password = \"hunter2\" }\n"},
	} {
		code, out := validateFile(t, c.name, c.src)
		if code != ExitUsage || strings.Contains(out, "hunter2") {
			t.Errorf("validate of %s %q: exit %d; want it refused with the secret masked:\n%s", c.name, c.src, code, out)
		}
		if !strings.Contains(out, `password = "*******"`) {
			t.Errorf("validate of %s %q: no snippet shows the secret's line masked:\n%s", c.name, c.src, out)
		}
	}
}

// TestJSONSecretKeepsTheNextValueOnItsLineReadable: masking a JSON file by HCL's rules too
// must not mask past a plain secret's comma: the error of `"capacity_min": "bad"` after
// `"secrets": "x",` on one line shows the size it names.
func TestJSONSecretKeepsTheNextValueOnItsLineReadable(t *testing.T) {
	code, out := validateFile(t, "db.json", `{"id": "db", "secrets": "hunter2", "capacity_min": "bad"}`+"\n")
	if code != ExitUsage || strings.Contains(out, "hunter2") || !strings.Contains(out, `"capacity_min": "bad"`) {
		t.Errorf("validate: exit %d; want the secret masked and the bad size shown:\n%s", code, out)
	}
}

// TestJSONMountFlagsWithoutBracketsDoNotShowTheFlagAfterTheComma: `"mount_flags": "rw",
// "password=hunter2"` (a list whose brackets were forgotten) masked "rw" and stopped at the
// comma, JSON's plain value's end, its second flag shown in the snippet. A string after the
// comma that is not a key is the value's too, on the same line or the next.
// Found by helper review83 (own).
func TestJSONMountFlagsWithoutBracketsDoNotShowTheFlagAfterTheComma(t *testing.T) {
	for _, src := range []string{
		`{"id": "db", "mount_options": {"mount_flags": "rw", "password=hunter2"}, "capacity_min": "bad"}` + "\n",
		"{\"id\": \"db\",\n \"mount_options\": {\"mount_flags\": \"rw\",\n   \"password=hunter2\"},\n \"capacity_min\": \"bad\"}\n",
	} {
		code, out := validateFile(t, "db.json", src)
		if code != ExitUsage || strings.Contains(out, "hunter2") || !strings.Contains(out, `"****************"`) {
			t.Errorf("validate of %q: exit %d; want it refused with the flag's line shown masked:\n%s", src, code, out)
		}
		if first, _, _ := strings.Cut(src, "\n"); strings.Contains(first, "capacity_min") && !strings.Contains(out, `"capacity_min": "bad"`) {
			t.Errorf("validate of %q: the bad size after the flags is masked too:\n%s", src, out)
		}
	}
}
