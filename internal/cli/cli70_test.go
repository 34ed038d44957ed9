package cli

import (
	"context"
	"reflect"
	"strings"
	"testing"
	"time"

	"github.com/volctl/volctl/internal/csi/csitest"
	"github.com/volctl/volctl/internal/iostreams"
)

// TestMultiFileCreateFailureLineIsScrubbed: `volume create a.hcl b.hcl` prints each
// volume's failure on stderr as it happens ("Error: ..."), and only the summary ("1 of 2
// volumes failed (see above)") went through Factory.RedactError. A hostile plugin that echoes
// the volumes' secret into the external ID it answers made the engine word the second
// volume's refusal from that ID: the line printed mid-run showed the secret, where a create of
// the same file alone scrubs it.
// Found by helper review70.
func TestMultiFileCreateFailureLineIsScrubbed(t *testing.T) {
	const secret = "rv70-echo-s3cret-77a1"
	ctx := context.Background()
	mem := csitest.NewMemPlugin(csitest.DefaultMemConfig())
	_, e, _ := serveMem(t, mem, csitest.WithInterceptor(echoSecretAsCreatedID))
	dir := t.TempDir()
	var files []string
	for _, id := range []string{"a", "b"} {
		files = append(files, secretSpecFile(t, dir, id, secret))
	}
	ios, _, out, errOut := iostreams.Test()
	f := NewFactory(ios)
	f.engine = e
	err := runCmd(t, NewRootCmd(f), append([]string{"volume", "create"}, files...)...)
	code := 0
	if err != nil {
		code = f.Report(f.RedactError(ctx, err))
	}
	all := out.String() + errOut.String()
	if code == 0 || !strings.Contains(all, `create volume "b"`) {
		t.Fatalf("premise: the second create is refused (exit %d):\n%s", code, all)
	}
	if strings.Contains(all, secret) {
		t.Errorf("volume create of two files shows the secret the plugin echoed (exit %d):\n%s", code, all)
	}
}

// TestRangeOverTheClaimObjectIsRefusedBeforeTheClaim: docs/json.md promises that a -t
// of an acting command reading a field the result never has, "a field of a string, number or
// bool (`{{.target_path.x}}`)" included, is refused as the flag is read, before anything is
// done, exit 2. A range over the claim object (a map: its values, strings, numbers, bools and
// the binds list) reads .x of each of them, which none ever has; the checker left a range
// over an object to the run (elemType of a struct is unknown), so the claim was made, published,
// kept, and the command then exited 1 "only printing it failed".
// Found by helper review70.
func TestRangeOverTheClaimObjectIsRefusedBeforeTheClaim(t *testing.T) {
	requireMount(t)
	h := newCLIHarness(t)
	h.createVolume(t, "v", "single-node-writer")
	t.Cleanup(func() { h.e.Release(h.ctx, "v", "a") })
	code, out, errOut := h.runReported("volume", "claim", "v", "--alloc", "a", "-t", "{{range .}}{{.x}}{{end}}")
	v, err := h.e.Volume(h.ctx, "v")
	if err != nil {
		t.Fatal(err)
	}
	if code != ExitUsage || len(v.Claims) != 0 {
		t.Errorf("a template reading a field of every value of the claim object: exit %d (want %d, refused before anything is done), %d claim(s) left held\nstdout: %s\nstderr: %s",
			code, ExitUsage, len(v.Claims), out, errOut)
	}
}

// TestEventsTemplateRangingOverAnEventObjectFailsOnEveryState: the same read in a
// reading command. docs/json.md: a -t of events (a command that only reads) reading a field
// the result never has is refused "before anything is read, whatever the state holds ... not
// exit 0 until the first volume is created". Ranging over each event object's values (its
// id, at, kind, message...) and reading .x of them fails on every event; with no event of the
// kind yet it exited 0, and the same command failed, exit 2, once one was recorded (with
// --follow: it waits, then fails at the first event).
// Found by helper review70.
func TestEventsTemplateRangingOverAnEventObjectFailsOnEveryState(t *testing.T) {
	h := newCLIHarness(t)
	code, out, errOut := h.runReported("events", "--kind", "volume-delete", "-t", "{{range .}}{{range .}}{{.x}}{{end}}{{end}}")
	if code != ExitUsage {
		t.Errorf("events -t reading a field of every value of an event: exit %d on a log with no such event (want %d, as once one is recorded)\nstdout: %s\nstderr: %s",
			code, ExitUsage, out, errOut)
	}
}

// TestRangeOverAnObjectIsRefusedOnlyWhenNoValueHasWhatItReads: the check of a range over an
// object (TestRangeOverTheClaimObjectIsRefusedBeforeTheClaim) refuses a body that fails under
// every value's type, and takes one that some value passes: an object's values are of as many
// types as its fields, and a body reading a field of those that have it is no typo.
func TestRangeOverAnObjectIsRefusedOnlyWhenNoValueHasWhatItReads(t *testing.T) {
	type inner struct {
		State string `json:"state"`
	}
	type object struct {
		Name  string    `json:"name"`
		Inner inner     `json:"inner"`
		At    time.Time `json:"at"`
	}
	for tmpl, refused := range map[string]bool{
		"{{range .}}{{.state}}{{end}}":                                         false,
		"{{range $k, $v := .}}{{$k}}={{$v}} {{end}}":                           false,
		"{{range $v := .}}{{$v.state}}{{end}}":                                 false,
		"{{range .}}{{.nosuch}}{{end}}":                                        true,
		"{{range $k, $v := .}}{{$k}}{{$v.nosuch}}{{end}}":                      true,
		"{{range .inner}}{{.x}}{{end}}":                                        true,
		"{{range .}}{{if eq (printf \"%T\" .) \"x\"}}{{.state}}{{end}}{{end}}": false,
	} {
		err := checkTemplateFieldsOf(&exportFlags{Template: tmpl}, reflect.TypeFor[object](), afterWork)
		switch {
		case refused && (err == nil || !strings.Contains(err.Error(), "reads what no value of the object")):
			t.Errorf("%s: %v, want it refused as reading what no value of the object has", tmpl, err)
		case !refused && err != nil:
			t.Errorf("%s: %v, want it taken", tmpl, err)
		}
	}
}
