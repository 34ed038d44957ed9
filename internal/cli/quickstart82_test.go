package cli

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/volctl/volctl/internal/iostreams"
	"github.com/volctl/volctl/internal/spec"
)

// TestInitJSONNameRefusalDoesNotSayItWouldBeReadAsJSON: `volctl init volume web.json` is
// refused, exit 2, "init: web.json would be read as JSON, and the example is HCL with
// comments" (and `volctl init --help` and its man page say the same). Since volctl reads a
// .json file that starts as HCL does (a name, `#` or `/`) as HCL, as Nomad does (spec.isJSON,
// docs/specs.md), that reason is false: the example starts with a `#` comment, and the very
// example written to web.json by hand (`volctl init volume - > web.json`) is read as HCL and
// validates. A newcomer is told something about how volctl reads their files that volctl no
// longer does. Correct: either write the example (it parses as volctl and Nomad read it), or,
// if a .hcl name is still wanted, refuse without claiming volctl would read the file as JSON.
// Found by helper review82 (quickstart).
func TestInitJSONNameRefusalDoesNotSayItWouldBeReadAsJSON(t *testing.T) {
	dir := t.TempDir()
	file := filepath.Join(dir, "web.json")

	// The precondition: the example, written under that name, is read as HCL and is valid.
	src, err := spec.ExampleFor(spec.KindVolume, file)
	if err != nil {
		t.Fatalf("the volume example for %s: %v", file, err)
	}
	if v, diags := spec.ParseVolume(file, src, spec.VerbAny); diags.HasErrors() || v == nil || v.ID != "web" {
		t.Fatalf("the example as %s does not parse as volume \"web\" (the precondition): %v", file, diags)
	}

	ios, _, _, _ := iostreams.Test()
	err = runCmd(t, newCmdInit(NewFactory(ios), nil), "volume", file)
	if err == nil {
		// Written: it must be what was parsed above.
		got, rerr := os.ReadFile(file)
		if rerr != nil {
			t.Fatalf("init volume %s succeeded but wrote nothing: %v", file, rerr)
		}
		if _, diags := spec.ParseVolume(file, got, spec.VerbAny); diags.HasErrors() {
			t.Fatalf("init volume %s wrote an example that does not parse: %v", file, diags)
		}
		return
	}
	if strings.Contains(err.Error(), "would be read as JSON") {
		t.Errorf("init volume %s: %v (exit %d)\nvolctl reads a .json file that starts as HCL (the example starts with a # comment) as HCL, "+
			"and the same example under that name parses as volume \"web\": the refusal's reason is false; "+
			"want the example written, or a refusal that does not say volctl would read it as JSON", file, err, ExitCode(err))
	}
}
