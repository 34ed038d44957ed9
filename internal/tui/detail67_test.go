package tui

import (
	"context"
	"fmt"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/volctl/volctl/internal/csi"
	"github.com/volctl/volctl/internal/csi/csitest"
	"github.com/volctl/volctl/internal/engine"
	"github.com/volctl/volctl/internal/spec"
)

// caps67 is the capability every volume of these tests is made with.
var caps67 = []spec.Capability{{AccessMode: spec.SingleNodeWriter, AttachmentMode: spec.FileSystem}}

// otherProcess opens a second engine on e's state dir: another volctl process.
func otherProcess(t *testing.T, e *engine.Engine) *engine.Engine {
	t.Helper()
	o, err := engine.Open(context.Background(), engine.Config{StateDir: e.StateDir(),
		Retry:    engine.RetryPolicy{Attempts: 1, Base: time.Millisecond, Max: time.Millisecond},
		Timeouts: csi.Timeouts{Short: 2 * time.Second, Long: 5 * time.Second}})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { o.Close() })
	return o
}

// racingEngine is the real engine with a hook run once right after a read of a volume
// (Volume or VolumeShown, whichever the dashboard reads it with) returns: another process
// acting between the detail's read and whatever it does after it.
type racingEngine struct {
	*engine.Engine
	mu    *sync.Mutex
	after *func()
	ran   *bool
}

func (r racingEngine) Volume(ctx context.Context, id string) (engine.VolumeInfo, error) {
	v, err := r.Engine.Volume(ctx, id)
	r.hook()
	return v, err
}

func (r racingEngine) VolumeShown(ctx context.Context, id string) (engine.VolumeInfo, error) {
	v, err := r.Engine.VolumeShown(ctx, id)
	r.hook()
	return v, err
}

func (r racingEngine) hook() {
	r.mu.Lock()
	hook := *r.after
	*r.after = nil
	r.mu.Unlock()
	if hook != nil {
		hook()
		*r.ran = true
	}
}

// TestVolumeDetailReadBeforeAnotherProcessDeletesItShowsNoSecret: the dashboard's list
// read is scrubbed with the secrets that same read found (engine.Dashboard). The volume detail
// read the volume with engine.Volume and scrubbed it after, with a read of its own
// (RedactValue): a volume another volctl deleted between the two had its plugin's echo of its
// secret (here in its volume_context) drawn whole in the detail. It reads it with
// engine.VolumeShown now, the secrets read in the volume's own snapshot. Found by helper
// review67.
func TestVolumeDetailReadBeforeAnotherProcessDeletesItShowsNoSecret(t *testing.T) {
	const secret = "detailrace-s3cret-SENTINEL-6701"
	ctx := context.Background()
	e, _ := realEngineWith(t, func(c *csitest.MemConfig) { c.CreateContext = map[string]string{"echo": secret} })
	if _, err := e.CreateVolume(ctx, spec.Volume{ID: "db", Name: "db", Type: "csi", PluginID: "mem", Capabilities: caps67,
		Secrets: spec.Secrets{"token": secret}}); err != nil {
		t.Fatal(err)
	}
	if v, err := e.Volume(ctx, "db"); err != nil || v.Context["echo"] != secret {
		t.Fatalf("the plugin did not echo the secret into the context (%v, %v): the test tests nothing", v.Context, err)
	}
	other := otherProcess(t, e)
	var (
		mu   sync.Mutex
		hook func()
		ran  bool
	)
	eng := racingEngine{Engine: e, mu: &mu, after: &hook, ran: &ran}
	h := newHarness(t, eng, Options{})
	mu.Lock()
	hook = func() {
		if err := other.DeleteVolume(ctx, "db"); err != nil {
			t.Errorf("delete by the other process: %v", err)
		}
	}
	mu.Unlock()
	h.keys("enter") // the detail of "db": read, then deleted elsewhere, then scrubbed
	d := h.m.detail
	if d == nil || !ran {
		t.Fatalf("no detail open (%v), or its volume not deleted after its read (%v): the test tests nothing", d != nil, ran)
	}
	shown := d.title + "\n" + d.note
	if d.render != nil {
		shown += "\n" + d.render(200)
	}
	if strings.Contains(shown, secret) {
		t.Errorf("the volume detail, read before another process deleted the volume and scrubbed after, shows the secret the plugin echoed:\n%s", shown)
	}
}

// probeFailing is the fixture with a redactor knowing one secret, whose probe round
// fails as engine.PluginStatus does when the round's deadline (probeTimeout) passes: naming
// each plugin by its ID as stored.
type probeFailing struct {
	scrubbingEngine
	err error
}

func (e probeFailing) PluginStatus(context.Context, string) ([]engine.PluginInfo, error) {
	return nil, e.err
}

// TestProbeErrorIsScrubbedOfSecrets: every other text the dashboard shows is scrubbed of
// the state's secrets (the reads, the volume detail's read error, an action's result and
// error); a failed probe round's error went to the status line whole ("probe plugins: " +
// err): engine.PluginStatus's "interrupted while probing plugin %q, ..." names the plugins by
// their IDs as stored, and an ID holding a secret value, which the plugins view shows as
// "[REDACTED]", was spelled out there. Found by helper review67.
func TestProbeErrorIsScrubbedOfSecrets(t *testing.T) {
	const secret = "tok3n-probe-s3cret"
	fake := fixture()
	probeErr := fmt.Errorf("interrupted while probing plugin %q, %q: %w", "ceph-"+secret, "hostpath", context.DeadlineExceeded)
	eng := probeFailing{scrubbingEngine: scrubbingEngine{fakeEngine: fake, secret: secret}, err: probeErr}
	h := newHarness(t, eng, Options{})
	h.send(probeTickMsg{})
	shown := h.m.status.text + "\n" + h.m.View()
	if !strings.Contains(shown, "probe plugins") {
		t.Fatalf("the probe's failure is not shown: the test tests nothing:\n%s", shown)
	}
	if strings.Contains(shown, secret) {
		t.Errorf("the status line shows a secret held by a plugin's ID in the probe's error:\n%s", h.m.status.text)
	}
}

// TestDetailOfAVolumeGoneSaysSoWhenTwoOthersStartSo: the detail of a volume reads it again
// by its ID, which engine.Volume takes as a prefix too; one other volume starting so was told
// from it (TestDetailOfAVolumeGoneNeverShowsAnother), but with two the read is an ambiguous
// prefix, and the detail of "db", deleted elsewhere, said `read volume "db": prefix "db"
// matches 2 volumes: db-a, db-b`, not that it no longer exists: a failure naming two other
// volumes, for a read that found what it needed to know (volumeGone). Found by helper review67.
func TestDetailOfAVolumeGoneSaysSoWhenTwoOthersStartSo(t *testing.T) {
	ctx := context.Background()
	e, _ := realEngine(t)
	if _, err := e.CreateVolume(ctx, spec.Volume{ID: "db", Name: "db", Type: "csi", PluginID: "mem", Capabilities: caps67}); err != nil {
		t.Fatal(err)
	}
	h := newHarness(t, e, Options{})
	h.keys("enter")
	if d := h.m.detail; d == nil || d.volume == nil || d.volume.ID != "db" {
		t.Fatalf("the detail of db is not open:\n%s", h.m.View())
	}
	replacedByTwoStartingSo(t, e)
	h.send(refreshTickMsg{})
	out := h.m.View()
	if !strings.Contains(out, `volume "db" no longer exists`) || strings.Contains(out, "matches 2 volumes") {
		t.Errorf("the detail of volume db, deleted, with db-a and db-b made since:\n%s", out)
	}
}

// TestConfirmedDeleteOfAVolumeGoneSaysItIsGone: as the detail, a confirmed action reads
// its volume first (action.changed) and says "no longer exists: nothing to delete" when it is
// gone, or another volume answers in its place; with two volumes starting with its ID the read
// was an ambiguous prefix, and the error shown "delete "db": read it first, to act only on
// what was confirmed: prefix "db" matches 2 volumes: ...; nothing done": a read failure naming
// other volumes, as if a retry could help. Found by helper review67.
func TestConfirmedDeleteOfAVolumeGoneSaysItIsGone(t *testing.T) {
	ctx := context.Background()
	e, _ := realEngine(t)
	if _, err := e.CreateVolume(ctx, spec.Volume{ID: "db", Name: "db", Type: "csi", PluginID: "mem", Capabilities: caps67}); err != nil {
		t.Fatal(err)
	}
	h := newHarness(t, e, Options{})
	h.keys("D")
	if h.m.dialog == nil {
		t.Fatalf("D opened no question:\n%s", h.m.View())
	}
	replacedByTwoStartingSo(t, e)
	h.keys("tab", "enter")
	shown := h.m.status.text
	if h.m.failure != nil {
		shown += "\n" + h.m.failure.err
	}
	if !strings.Contains(shown, `volume "db" no longer exists`) || strings.Contains(shown, "matches 2 volumes") {
		t.Errorf("a delete confirmed for db, deleted since, with db-a and db-b made since, says:\n%s", shown)
	}
	for _, id := range []string{"db-a", "db-b"} {
		if _, err := e.Volume(ctx, id); err != nil {
			t.Errorf("volume %s: %v", id, err)
		}
	}
}

// replacedByTwoStartingSo has another process delete volume db of e's state and create db-a
// and db-b, each of whose IDs starts with db's.
func replacedByTwoStartingSo(t *testing.T, e *engine.Engine) {
	t.Helper()
	ctx := context.Background()
	other := otherProcess(t, e)
	if err := other.DeleteVolume(ctx, "db"); err != nil {
		t.Fatal(err)
	}
	for _, id := range []string{"db-a", "db-b"} {
		if _, err := other.CreateVolume(ctx, spec.Volume{ID: id, Name: id, Type: "csi", PluginID: "mem", Capabilities: caps67}); err != nil {
			t.Fatal(err)
		}
	}
}

// TestForcedDetachReportSaysTheNodeItDetachedFrom: a forced detach of a volume with no claims
// whose recorded attachment it undid (the ControllerUnpublishVolume an earlier forced detach
// left owed) was reported "force-detached "v": released 0 claims", as if it did nothing, as the
// command line said "nothing to detach" of it (TestForcedDetachThatSentTheOwedUnpublishDoesNotSayNothingToDetach).
func TestForcedDetachReportSaysTheNodeItDetachedFrom(t *testing.T) {
	msg := detachReport(action{kind: actForceDetach, volume: "v"}, engine.DetachResult{DetachedFrom: "node-1"}, nil)
	if msg.err != nil || !strings.Contains(msg.text, `detached it from node "node-1"`) {
		t.Errorf("the report of a forced detach that detached volume v from node-1: %q, %v", msg.text, msg.err)
	}
}
