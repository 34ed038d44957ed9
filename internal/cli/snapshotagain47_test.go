package cli

import (
	"encoding/json"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/volctl/volctl/internal/csi"
	"github.com/volctl/volctl/internal/csi/csitest"
	"github.com/volctl/volctl/internal/spec"
)

// Two volctl processes snapshot one volume under one NAME at once: one sends CreateSnapshot
// and takes the snapshot; the other waits for the volume's lock, gets the same snapshot back
// from the plugin (CSI names make CreateSnapshot idempotent) and says it exists already:
// nothing new was taken. Then the same NAME once more, with a --parameter the snapshot was not
// taken with, says so too, and that the parameter was not applied. Before, all three said
// "created". Through the command, each with its own engine, as processes.
func TestSnapshotCreateOfOneNameAgainSaysItExistsAlready(t *testing.T) {
	h, faults, _ := newHeldCLIHarness(t)
	h.createVolume(t, "a", spec.SingleNodeWriter)
	gate := make(chan struct{})
	faults.Inject(csi.RPCCreateSnapshot, csitest.Fault{Gate: gate, Times: 1})
	first := make(chan commandResult, 1)
	go h.runCommand([]string{"volume", "snapshot", "create", "a", "nightly"}, &signalWriter{seen: make(chan struct{})}, false, first)
	waitHeld(t, faults, 1, gate, "the first create's CreateSnapshot")
	b := h.commandWhileHeld(t, "a", gate, "volume", "snapshot", "create", "a", "nightly")
	a := <-first
	created := regexp.MustCompile(`^Snapshot "[^"]+" of volume "a" created \(name "nightly", [^)]+\)\n$`)
	existing := regexp.MustCompile(`^Snapshot "[^"]+" of volume "a" exists already \(name "nightly", [^)]+, taken [^)]+ ago\): nothing new was taken; another NAME takes a new snapshot\n$`)
	if a.code != 0 || !created.MatchString(a.out) {
		t.Errorf("the create that sent CreateSnapshot first: exit %d, stdout %q, stderr %q; want exit 0 saying created", a.code, a.out, a.errOut)
	}
	if b.code != 0 || !existing.MatchString(b.out) {
		t.Errorf("the create that waited for it: exit %d, stdout %q, stderr %q; want exit 0 saying it exists already", b.code, b.out, b.errOut)
	}
	c := make(chan commandResult, 1)
	h.runCommand([]string{"volume", "snapshot", "create", "a", "nightly", "--parameter", "tier=cold"}, &signalWriter{seen: make(chan struct{})}, false, c)
	r := <-c
	if want := " (this one keeps the parameters it was taken with, not --parameter's)\n"; r.code != 0 || !strings.HasSuffix(r.out, want) || !existing.MatchString(strings.TrimSuffix(r.out, want)+"\n") {
		t.Errorf("the create of nightly again with a parameter: exit %d, stdout %q, stderr %q; want exit 0 saying it exists already, its parameters kept", r.code, r.out, r.errOut)
	}
}

// A snapshot create the plugin answers with a snapshot it held under the NAME, which volctl
// has no record of and the plugin dates days before, says it recorded that one, and how old
// the plugin says it is: before, "created".
func TestSnapshotCreateAnsweredWithAnOldSnapshotSaysItWasRecorded(t *testing.T) {
	h, _, mem := newHeldCLIHarness(t)
	v := h.createVolume(t, "a", spec.SingleNodeWriter)
	mem.AddSnapshot(csi.Snapshot{ID: "kept", SourceVolumeID: v.ExternalID, SizeBytes: 1 << 20, ReadyToUse: true, CreatedAt: time.Now().Add(-72 * time.Hour)})
	code, out, errOut := h.runReported("volume", "snapshot", "create", "a", "kept")
	want := `Snapshot "kept" of volume "a" recorded (name "kept", 1.0 MiB): the plugin answered with a snapshot it held under this NAME, which it dates 3d ago, before this create` + "\n"
	if code != 0 || out != want {
		t.Errorf("snapshot create answered with a snapshot 3 days old: exit %d, stdout %q, stderr %q; want exit 0 saying\n%s", code, out, errOut, want)
	}
}

// snapshot create --json printed the snapshot alone: a nightly script passing one fixed NAME
// could not tell the snapshot taken now from the one the NAME took the first night, which the
// text says ("exists already"). Its object now says what the create did: outcome "created",
// "exists" or "recorded", as the text does.
func TestSnapshotCreateJSONSaysWhetherItTookANewSnapshot(t *testing.T) {
	h, _, mem := newHeldCLIHarness(t)
	v := h.createVolume(t, "a", spec.SingleNodeWriter)
	for _, c := range []struct{ name, want string }{{"nightly", "created"}, {"nightly", "exists"}} {
		code, out, errOut := h.runReported("volume", "snapshot", "create", "a", c.name, "--json")
		var got struct {
			ID      string `json:"id"`
			Name    string `json:"name"`
			Outcome string `json:"outcome"`
		}
		if err := json.Unmarshal([]byte(out), &got); code != 0 || err != nil || got.Outcome != c.want || got.Name != c.name || got.ID == "" {
			t.Fatalf("snapshot create a %s --json: exit %d, stdout %q (%v), stderr %q; want outcome %q with the snapshot", c.name, code, out, err, errOut, c.want)
		}
	}
	mem.AddSnapshot(csi.Snapshot{ID: "kept", SourceVolumeID: v.ExternalID, SizeBytes: 1 << 20, ReadyToUse: true, CreatedAt: time.Now().Add(-72 * time.Hour)})
	code, out, errOut := h.runReported("volume", "snapshot", "create", "a", "kept", "--json", "--jq", ".outcome")
	if code != 0 || out != "recorded\n" {
		t.Fatalf("snapshot create answered with a snapshot 3 days old, --jq .outcome: exit %d, stdout %q, stderr %q; want \"recorded\"", code, out, errOut)
	}
}

// snapshot create -t '{{.outcome}}' was refused, exit 2, its list of fields without outcome:
// the template's fields were checked against the snapshot alone, not the object --json prints
// (addActingExportFlags[snapshotCreated]).
// Found by helper review81 (own).
func TestSnapshotCreateTemplateReadsItsOutcome(t *testing.T) {
	h, _, _ := newHeldCLIHarness(t)
	h.createVolume(t, "a", spec.SingleNodeWriter)
	code, out, errOut := h.runReported("volume", "snapshot", "create", "a", "nightly", "-t", "{{.outcome}} {{.id}}")
	if code != 0 || out != "created nightly" {
		t.Fatalf("snapshot create a nightly -t '{{.outcome}} {{.id}}': exit %d, stdout %q, stderr %q; want \"created nightly\"", code, out, errOut)
	}
}
