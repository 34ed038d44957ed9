package spec

import (
	"strings"
	"testing"
)

// TestJSONSecretHoldingATemplateStartDoesNotMaskTheRestOfTheFile: a JSON spec's strings are
// literal text to Nomad and to volctl, so a password such as "pa${ss" or "pa%{ss" is a valid
// secret (the file is read, exit 0, when nothing else is wrong). But redactTokens now also
// masks a file read as JSON by HCL's token rules, and hclsyntax's lexer reads that "${" as an
// interpolation whose own quote opens a new string: the string never closes, and everything
// after the secret, to the end of the file, is masked. A bad capacity later in the file then
// gets an error whose snippet is asterisks and whose detail says `size [REDACTED] has an
// unknown unit` (hideMasked scrubs the masked value): the user cannot see what is wrong. The
// one-line form is what json.dumps writes. Correct: the mask covers the secret only; the error
// of the value after it shows the value ("10Q") in its snippet and its detail.
// Found by helper review83 (spec).
func TestJSONSecretHoldingATemplateStartDoesNotMaskTheRestOfTheFile(t *testing.T) {
	const rest = `"capability": [{"access_mode": "single-node-writer", "attachment_mode": "file-system"}]`
	for _, c := range []struct{ name, src, line string }{
		{"one line, ${", `{"id": "db", "type": "csi", "plugin_id": "p", "secrets": {"password": "pa${ss"}, "capacity_min": "10Q", ` + rest + `}`,
			`"capacity_min": "10Q"`},
		{"one line, %{", `{"id": "db", "type": "csi", "plugin_id": "p", "secrets": {"password": "pa%{ss"}, "capacity_min": "10Q", ` + rest + `}`,
			`"capacity_min": "10Q"`},
		{"one value a line", "{\n  \"id\": \"db\",\n  \"type\": \"csi\",\n  \"plugin_id\": \"p\",\n  \"secrets\": {\"password\": \"pa${ss\"},\n  \"capacity_min\": \"10Q\",\n  " + rest + "\n}\n",
			`  "capacity_min": "10Q",`},
	} {
		t.Run(c.name, func(t *testing.T) {
			// Premise: the secret alone is valid (the file with a good capacity is read).
			good := strings.Replace(c.src, `"10Q"`, `"10GiB"`, 1)
			if _, diags := NewParser().Parse("t.spec", []byte(good), VerbAny); diags.HasErrors() {
				t.Fatalf("premise: the spec with a valid capacity must be read: %v", diags)
			}
			text, diags := renderFailure(t, c.src, 200)
			if strings.Contains(text, "pa${ss") || strings.Contains(text, "pa%{ss") {
				t.Fatalf("secret shown:\n%s", text)
			}
			if !strings.Contains(text, c.line) {
				t.Errorf("the snippet of the bad capacity does not show %s (masked as if it were the secret's):\n%s", c.line, text)
			}
			found := false
			for _, d := range diags {
				if d.Summary == "Invalid capacity" {
					found = true
					if !strings.Contains(d.Detail, `"10Q"`) {
						t.Errorf("the capacity error does not name the value it refuses: %q", d.Detail)
					}
				}
			}
			if !found {
				t.Fatalf("premise: no Invalid capacity error:\n%s", text)
			}
		})
	}
}

// TestStringEndingInABackslashDoesNotShowTheSecretsBelowIt: a quoted value that ends in a
// backslash (a Windows or SMB path typed `"\\\\fileserver\\share\"`, or `"C:\data\"`) escapes
// its closing quote, so hclsyntax's lexer reads the string on over the following lines, and
// every quote after it is out of step: `secrets {` below is string text, `hunter2` a bare name
// outside any string. redactTokens masks by those tokens, never sees a secrets name, and masks
// nothing; HCL's "Invalid multi-line string" errors then quote each line after, the password's
// line among them, in clear on the terminal (and in CI logs). The same holds for a file read
// as JSON that holds HCL (`"id": "db\` then `secrets { ... }`), the case the JSON mask's HCL
// pass was added for. Correct: a secret is masked in every snippet, whatever precedes it.
// Found by helper review83 (spec).
func TestStringEndingInABackslashDoesNotShowTheSecretsBelowIt(t *testing.T) {
	const secret = "TOPSECRET"
	for _, c := range []struct{ name, src string }{
		{"SMB share path", baseVolume + "parameters {\n  source = \"\\\\\\\\fileserver\\\\share\\\"\n}\nsecrets {\n  password = \"" + secret + "\"\n}\n"},
		{"Windows path", "id = \"db\"\nname = \"C:\\data\\\"\nsecrets {\n  password = \"" + secret + "\"\n}\n"},
		{"JSON holding HCL", "{\n  \"id\": \"db\\\n  secrets { password = \"" + secret + "\" }\n}\n"},
	} {
		t.Run(c.name, func(t *testing.T) {
			text, diags := renderFailure(t, c.src, 120)
			if strings.Contains(text, secret) {
				t.Errorf("secret rendered:\n%s", text)
			}
			for _, j := range JSONDiagnostics("t.spec", diags) {
				if strings.Contains(j.Summary+j.Detail, secret) {
					t.Errorf("secret in JSON diagnostic: %+v", j)
				}
			}
		})
	}
}

// TestManyStringsPastTheirLinesStillMaskTheSecretsBelow: past maxRelexes quoted strings that run
// past their lines, redactTokens masks all that follows rather than lex again: a secret below
// as many broken lines as that, and more, is masked all the same.
func TestManyStringsPastTheirLinesStillMaskTheSecretsBelow(t *testing.T) {
	const secret = "TOPSECRET"
	src := "id = \"db\"\n" + strings.Repeat("name = \"C:\\data\\\"\n", 40) + "secrets {\n  password = \"" + secret + "\"\n}\n"
	text, _ := renderFailure(t, src, 400)
	if strings.Contains(text, secret) {
		t.Errorf("secret rendered:\n%s", text)
	}
}
