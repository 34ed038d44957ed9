package cli

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/hashicorp/hcl/v2"
	"github.com/volctl/volctl/internal/iostreams"
	"github.com/volctl/volctl/internal/spec"
)

// validateFile writes src to a file named name in a fresh directory (mode 0600) and runs
// `volctl validate` on it, returning its exit status and stderr.
func validateFile(t *testing.T, name, src string) (int, string) {
	t.Helper()
	path := filepath.Join(t.TempDir(), name)
	if err := os.WriteFile(path, []byte(src), 0o600); err != nil {
		t.Fatal(err)
	}
	ios, _, _, errOut := iostreams.Test()
	err := validateRun(context.Background(), &ValidateOptions{IO: ios, Files: []string{path}, ReadFile: os.ReadFile})
	return ExitCode(err), errOut.String()
}

// TestValidateJSONNamedHCLStartingWithANonASCIICharacterDoesNotShowItsSecret: a spec named
// .json whose first character is not ASCII (a no-break space pasted from a web page before
// HCL, as Nomad's reader skips as white space and reads as HCL) is read as JSON, since
// startsAsHCL looks at the first byte alone (ASCII letters, `_`, `"`, `#`, `/`). Its
// snippet is then masked with the JSON mask, which does not see HCL's `secrets = { ... }`:
// the error's source line shows the secret in clear, where the same file named .hcl shows
// it masked. Correct: a file's secrets are masked whichever syntax it is read in (read a
// .json file whose first character is not one JSON starts with as HCL, as Nomad does, or
// mask it as HCL too).
// Found by helper review82 (validate).
func TestValidateJSONNamedHCLStartingWithANonASCIICharacterDoesNotShowItsSecret(t *testing.T) {
	src := "\u00a0secrets { password = \"hunter2\" }\n" + validVolume
	code, hclOut := validateFile(t, "db.hcl", src)
	if code != ExitUsage || strings.Contains(hclOut, "hunter2") {
		t.Fatalf("premise: db.hcl is refused with the secret masked; exit %d, stderr:\n%s", code, hclOut)
	}
	code, jsonOut := validateFile(t, "db.json", src)
	if code != ExitUsage {
		t.Fatalf("db.json: exit %d, want %d (invalid)\nstderr:\n%s", code, ExitUsage, jsonOut)
	}
	if strings.Contains(jsonOut, "hunter2") {
		t.Errorf("validate of db.json shows the secret in clear (db.hcl, the same bytes, masks it):\n%s", jsonOut)
	}
}

// TestValidateNamesAnArgumentWithoutItsValueAfterAnotherOnItsLine: HCL1 (Nomad's reader, and
// volctl's through its rewrite) takes two arguments on one line, `name = "db" id = "db"`.
// With the second one's value left out (`name = "db" id =`), validate gives HCL's bare
// "Invalid expression ... found an invalid expression token" at the line's end, where no
// caret shows, naming nothing; the same argument on a line of its own gets `Missing value
// for "id"` on its name (missingValue). hclNameBefore only takes a name that follows a line
// break, comment, `{` or comma. Correct: the argument is named and placed on its name, as
// on a line of its own.
// Found by helper review82 (validate).
func TestValidateNamesAnArgumentWithoutItsValueAfterAnotherOnItsLine(t *testing.T) {
	rest := strings.Replace(strings.Replace(validVolume, "id        = \"db\"\n", "", 1), "name      = \"db\"\n", "", 1)
	if code, out := validateFile(t, "own.hcl", "name = \"db\"\nid = \n"+rest); code != ExitUsage || !strings.Contains(out, `Missing value for "id"`) {
		t.Fatalf("premise: `id =` on a line of its own is named; exit %d:\n%s", code, out)
	}
	if code, out := validateFile(t, "valid.hcl", "name = \"db\" id = \"db\"\n"+rest); code != 0 {
		t.Fatalf("premise: two arguments on one line are read (HCL1); exit %d:\n%s", code, out)
	}
	code, out := validateFile(t, "db.hcl", "name = \"db\" id = \n"+rest)
	if code != ExitUsage {
		t.Fatalf("exit %d, want %d\nstderr:\n%s", code, ExitUsage, out)
	}
	if !strings.Contains(out, `Missing value for "id"`) || !strings.Contains(out, "db.hcl:1:13") {
		t.Errorf("`name = \"db\" id =` is not named as id's missing value at id (1:13):\n%s", out)
	}
}

// TestValidateEmptyJSONFileSaysItIsEmpty: a spec file named .json with nothing in it (a JSON
// generator that failed, `gen > vol.json`) gets hcl/json's "Missing value: The JSON data
// ends prematurely", with no line shown, not volctl's "Empty spec" error saying the file is
// empty and how to start one, which the same file named .hcl, or standard input, gets
// (emptySpec; emptyWhat even words "is empty" before its JSON case). isJSON reads an empty
// .json file as JSON, where Nomad's reader (by content) reads it as HCL. Correct: one
// "Empty spec" error saying the file is empty.
// Found by helper review82 (validate).
func TestValidateEmptyJSONFileSaysItIsEmpty(t *testing.T) {
	if code, out := validateFile(t, "vol.hcl", ""); code != ExitUsage || !strings.Contains(out, "Empty spec") {
		t.Fatalf("premise: an empty vol.hcl is an empty spec; exit %d:\n%s", code, out)
	}
	code, out := validateFile(t, "vol.json", "")
	if code != ExitUsage {
		t.Fatalf("exit %d, want %d\nstderr:\n%s", code, ExitUsage, out)
	}
	if !strings.Contains(out, "Empty spec") || !strings.Contains(out, "vol.json is empty") {
		t.Errorf("an empty vol.json is not said to be empty:\n%s", out)
	}
}

// TestEmptyAgentConfigNamedJSONIsTakenWithAWarning: docs/agent.md says a config with nothing
// in it (empty, comments only, `{}`) starts the agent as without --config, with a warning;
// agent.hcl empty is so, and agent.json holding `{}` too. An empty agent.json is refused
// with hcl/json's "Missing value: The JSON data ends prematurely", so the agent does not
// start (isJSON reads a .json file with no content as JSON). Correct: taken, with the
// "Empty agent config" warning.
// Found by helper review82 (validate).
func TestEmptyAgentConfigNamedJSONIsTakenWithAWarning(t *testing.T) {
	if c, diags := spec.NewParser().ParseAgentConfig("agent.hcl", nil); c == nil || diags.HasErrors() {
		t.Fatalf("premise: an empty agent.hcl is taken; %v", diags)
	}
	c, diags := spec.NewParser().ParseAgentConfig("agent.json", nil)
	if c == nil || diags.HasErrors() || len(diags) != 1 || diags[0].Severity != hcl.DiagWarning || diags[0].Summary != "Empty agent config" {
		t.Errorf("empty agent.json: config %v, %v; want it taken with one warning, \"Empty agent config\"", c != nil, diags)
	}
}

// TestValidateJSONNamedHCLStartingWithAJSONWordDoesNotShowItsSecret: a `.json` file starting
// `null`, `true` or `false` and going on with HCL (`null secrets { password = "hunter2" }`) was
// read as JSON once a `.json` file was JSON where it starts as only JSON does, its snippet masked
// as JSON, the HCL secrets block's password shown in clear, where the same bytes named .hcl are
// masked (found by helper review82 (owne)). Such a word alone is the whole JSON file; followed
// by more, the file is HCL's, as Nomad reads it.
func TestValidateJSONNamedHCLStartingWithAJSONWordDoesNotShowItsSecret(t *testing.T) {
	for _, word := range []string{"null", "true", "false"} {
		src := word + " secrets { password = \"hunter2\" }\n" + validVolume
		code, out := validateFile(t, "db.json", src)
		if code != ExitUsage || strings.Contains(out, "hunter2") {
			t.Errorf("validate of db.json starting %q: exit %d; want it refused with the secret masked:\n%s", word, code, out)
		}
	}
}
