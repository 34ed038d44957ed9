package cli

import (
	"context"
	"encoding/json"
	"path/filepath"
	"strings"
	"testing"

	"github.com/volctl/volctl/internal/csi/csitest"
	"github.com/volctl/volctl/internal/engine"
	"github.com/volctl/volctl/internal/hostpath/hostpathtest"
	"github.com/volctl/volctl/internal/spec"
	"github.com/volctl/volctl/internal/store"
)

// TestVolumeStatusJSONSaysWhatSendsAnOwedUnpublish: a claim's release through a plugin restarted
// without PUBLISH_UNPUBLISH_VOLUME keeps the attachment, its ControllerUnpublishVolume owed and
// nothing able to send it. `volume status v` says so in words; `volume status v --json` had
// attached_to alone, and a script reading it could not tell an unpublish reconcile sends from
// one that waits for the plugin to be started with the capability (round 81's left item).
// Now unpublish_waits carries the text's words; none is there once nothing is owed.
func TestVolumeStatusJSONSaysWhatSendsAnOwedUnpublish(t *testing.T) {
	if err := hostpathtest.CanMount(); err != nil {
		t.Fatalf("precondition: the plugin cannot mount here: %v", err)
	}
	ctx := context.Background()
	mem := csitest.NewMountingMemPlugin(t, csitest.DefaultMemConfig())
	socket, stop := csitest.Serve(t, csitest.WithServer(mem))
	h := &cliHarness{ctx: ctx, state: filepath.Join(t.TempDir(), "state"), mem: mem, stop: stop}
	h.e = openEngine(t, h.state)
	if _, err := h.e.RegisterPlugin(ctx, spec.Plugin{ID: "p", Type: spec.PluginMonolith, Socket: socket}); err != nil {
		t.Fatal(err)
	}
	if _, err := h.e.CreateVolume(ctx, spec.Volume{ID: "v", Name: "v", Type: "csi", PluginID: "p",
		Capabilities: []spec.Capability{{AccessMode: spec.SingleNodeWriter, AttachmentMode: spec.FileSystem}}}); err != nil {
		t.Fatal(err)
	}
	statusJSON := func() map[string]any {
		t.Helper()
		code, out, errOut := runOnOut(ctx, h.e, "volume", "status", "v", "--json")
		if code != ExitOK {
			t.Fatalf("volume status v --json: exit %d: %s", code, errOut)
		}
		var got map[string]any
		if err := json.Unmarshal([]byte(out), &got); err != nil {
			t.Fatalf("volume status v --json: %v\n%s", err, out)
		}
		return got
	}
	if _, err := h.e.Claim(ctx, engine.ClaimRequest{VolumeID: "v", Alloc: "a1"}); err != nil {
		t.Fatal(err)
	}
	if got := statusJSON(); got["unpublish_waits"] != nil {
		t.Errorf("a claimed volume owes no unpublish, but unpublish_waits = %v", got["unpublish_waits"])
	}
	stop()
	mem.Reconfigure(func(c *csitest.MemConfig) { c.Controller.PublishUnpublishVolume = false })
	csitest.ServeAt(t, socket, csitest.WithServer(mem))
	if _, err := h.e.Release(ctx, "v", "a1"); err != nil {
		t.Fatalf("release: %v", err)
	}
	got := statusJSON()
	waits, _ := got["unpublish_waits"].(string)
	if got["attached_to"] == nil || !strings.Contains(waits, "Nothing can send it now") || !strings.Contains(waits, "PUBLISH_UNPUBLISH_VOLUME") {
		t.Fatalf("volume status v --json of an attachment its plugin cannot unpublish: attached_to %v, unpublish_waits %q; want it to say nothing can send it and why", got["attached_to"], waits)
	}
	code, out, errOut := runOnOut(ctx, h.e, "volume", "status", "v")
	if code != ExitOK || !strings.Contains(out, waits) {
		t.Errorf("volume status v (exit %d, %s) does not say what --json's unpublish_waits says (%q):\n%s", code, errOut, waits, out)
	}
}

// TestVolumeStatusJSONOfAnAttachmentKeptForNomadSaysTheTakeBackSendsIt: the attachment of a
// volume handed over to Nomad, kept for Nomad's allocations once the local claim is released:
// unpublish_waits names the take-back, as the text does.
func TestVolumeStatusJSONOfAnAttachmentKeptForNomadSaysTheTakeBackSendsIt(t *testing.T) {
	requireMount(t) // it claims
	h := newCLIHarness(t)
	h.createVolume(t, "db", spec.SingleNodeWriter)
	h.claim(t, "db", "web-0")
	st, err := store.Open(h.ctx, h.state)
	if err != nil {
		t.Fatal(err)
	}
	err = st.Update(h.ctx, func(tx *store.Tx) error {
		return tx.Handovers().Put(&store.Handover{VolumeID: "db", Address: "http://127.0.0.1:4646", Forced: true})
	})
	if cerr := st.Close(); err != nil || cerr != nil {
		t.Fatal(err, cerr)
	}
	if _, err := h.e.Release(h.ctx, "db", "web-0"); err != nil {
		t.Fatal(err)
	}
	code, out, errOut := runOnOut(h.ctx, h.e, "volume", "status", "db", "--json")
	if code != ExitOK {
		t.Fatalf("volume status db --json: exit %d: %s", code, errOut)
	}
	var got struct {
		Waits string `json:"unpublish_waits"`
	}
	if err := json.Unmarshal([]byte(out), &got); err != nil {
		t.Fatal(err, out)
	}
	want := "The ControllerUnpublishVolume owed waits for the volume to be taken back from Nomad at http://127.0.0.1:4646 (`volctl nomad release db`), then `volctl reconcile` sends it"
	if got.Waits != want {
		t.Errorf("unpublish_waits = %q, want %q", got.Waits, want)
	}
}

// TestVolumeStatusJSONUnpublishWaitsIsScrubbedOnce: unpublish_waits names the plugin, whose ID
// here holds a secret of the volume: --json masks it once, as the rest of the object does.
func TestVolumeStatusJSONUnpublishWaitsIsScrubbedOnce(t *testing.T) {
	const plugin = "share-EDA"
	h := releasedThroughAPluginWithoutUnpublish(t, plugin, spec.Secrets{"token": "EDA"})
	ctx := h.ctx
	code, out, errOut := runOnOut(ctx, h.e, "volume", "status", "v", "--json")
	if code != ExitOK {
		t.Fatalf("volume status v --json: exit %d: %s", code, errOut)
	}
	var got struct {
		Waits string `json:"unpublish_waits"`
	}
	if err := json.Unmarshal([]byte(out), &got); err != nil {
		t.Fatal(err, out)
	}
	if strings.Contains(out, plugin) || !strings.Contains(got.Waits, `plugin "share-`+spec.Redacted+`"`) {
		t.Errorf("unpublish_waits = %q, want plugin %q named share-%s, masked once", got.Waits, plugin, spec.Redacted)
	}
}

// releasedThroughAPluginWithoutUnpublish is a harness whose volume v, of plugin (with
// secrets), was claimed by alloc a1 and released through the plugin restarted without
// PUBLISH_UNPUBLISH_VOLUME: its attachment kept, the ControllerUnpublishVolume owed.
func releasedThroughAPluginWithoutUnpublish(t *testing.T, plugin string, secrets spec.Secrets) *cliHarness {
	t.Helper()
	if err := hostpathtest.CanMount(); err != nil {
		t.Fatalf("precondition: the plugin cannot mount here: %v", err)
	}
	ctx := context.Background()
	mem := csitest.NewMountingMemPlugin(t, csitest.DefaultMemConfig())
	socket, stop := csitest.Serve(t, csitest.WithServer(mem))
	h := &cliHarness{ctx: ctx, state: filepath.Join(t.TempDir(), "state"), mem: mem, stop: stop}
	h.e = openEngine(t, h.state)
	if _, err := h.e.RegisterPlugin(ctx, spec.Plugin{ID: plugin, Type: spec.PluginMonolith, Socket: socket}); err != nil {
		t.Fatal(err)
	}
	if _, err := h.e.CreateVolume(ctx, spec.Volume{ID: "v", Name: "v", Type: "csi", PluginID: plugin, Secrets: secrets,
		Capabilities: []spec.Capability{{AccessMode: spec.SingleNodeWriter, AttachmentMode: spec.FileSystem}}}); err != nil {
		t.Fatal(err)
	}
	if _, err := h.e.Claim(ctx, engine.ClaimRequest{VolumeID: "v", Alloc: "a1"}); err != nil {
		t.Fatal(err)
	}
	stop()
	mem.Reconfigure(func(c *csitest.MemConfig) { c.Controller.PublishUnpublishVolume = false })
	csitest.ServeAt(t, socket, csitest.WithServer(mem))
	if _, err := h.e.Release(ctx, "v", "a1"); err != nil {
		t.Fatalf("release: %v", err)
	}
	return h
}
