package cli

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/volctl/volctl/internal/engine"
	"github.com/volctl/volctl/internal/iostreams"
	"github.com/volctl/volctl/internal/spec"
	"github.com/volctl/volctl/internal/store"
)

// TestVolumeRowIsWordedByThePluginsProbe: `volctl status` probes the plugins first and words
// its volumes by those probes, not by the health last recorded, which another process's write
// lock may keep it from recording (WithPluginProbed). WithPluginProbed set the volume's
// schedulable from the probe, but the table's cell worded the reason the volume list's read had
// found in the stored health: a plugin recorded "not ready" and found dead by the probe was
// shown "unhealthy" in the plugin table and "no: plugin not ready" on its volume's row, on the
// same screen. Found by helper review71.
func TestVolumeRowIsWordedByThePluginsProbe(t *testing.T) {
	h := newCLIHarness(t)
	h.createVolume(t, "db", spec.SingleNodeWriter)
	notReady := false
	h.mem.SetReady(&notReady)
	if _, err := h.e.PluginStatus(h.ctx, "mem"); err != nil { // recorded: not ready
		t.Fatal(err)
	}
	h.stop() // the plugin dies
	holdWriteLock(t, h.state)

	ctx, cancel := context.WithTimeout(h.ctx, readDeadline)
	defer cancel()
	ios, _, out, errOut := iostreams.Test()
	start := time.Now()
	if err := statusRun(ctx, &StatusOptions{IO: ios, Engine: h.engine, Now: nowFunc, MaxVolumes: 20}); err != nil {
		t.Fatalf("status: %v\n%s", err, errOut)
	}
	if took := time.Since(start); took >= readDeadline {
		t.Fatalf("status took %v", took)
	}
	text := out.String()
	if !strings.Contains(text, "unhealthy") {
		t.Fatalf("the plugin table does not say what the probe found (unhealthy):\n%s", text)
	}
	var row string
	for _, l := range strings.Split(text, "\n") {
		if strings.HasPrefix(l, "db ") {
			row = l
		}
	}
	if !strings.Contains(row, "no: plugin unhealthy") || strings.Contains(row, "not ready") {
		t.Errorf("volume row %q beside a plugin its probe found unhealthy; want \"no: plugin unhealthy\"\n%s", row, text)
	}
}

// TestPendingExpansionOfAHandedOverVolumeSaysItWaitsForTheTakeBack: a volume handed over to
// Nomad with --force while an expansion is pending (ControllerExpandVolume sent, its answer not
// recorded): the expansion waits for the volume to be taken back, reconcile leaves it so, and
// `volume expand` is refused. The "Expansion Pending" row of `volume status ID` said "`volctl
// reconcile` sends it again and records the answer, as does the expand run again": the user
// ran reconcile, it reported nothing to do and the row stayed; the expand was refused. It names
// the take-back first now, as the Attached row of the same volume does. Found by helper review71.
func TestPendingExpansionOfAHandedOverVolumeSaysItWaitsForTheTakeBack(t *testing.T) {
	h := newCLIHarness(t)
	h.createVolume(t, "db", spec.SingleNodeWriter)
	st, err := store.Open(h.ctx, h.state)
	if err != nil {
		t.Fatal(err)
	}
	err = st.Update(h.ctx, func(tx *store.Tx) error { return tx.Volumes().SetExpansionIntent("db", 8<<30, 0) })
	if cerr := st.Close(); err != nil || cerr != nil {
		t.Fatal(err, cerr)
	}
	if _, err := h.e.HandOver(h.ctx, "db", engine.HandoverTarget{Address: "http://127.0.0.1:4646"}, true, nil); err != nil {
		t.Fatalf("forced hand over: %v", err)
	}
	// What the row advises, run: reconcile leaves the expansion for the take-back.
	if _, err := h.e.Reconcile(h.ctx); err != nil {
		t.Fatalf("reconcile: %v", err)
	}
	if v, err := h.e.Volume(h.ctx, "db"); err != nil || v.ExpansionPending != 8<<30 {
		t.Fatalf("after reconcile: pending %d, %v; want the expansion still pending (it waits for the take-back)", v.ExpansionPending, err)
	}
	ios, _, out, _ := iostreams.Test()
	if err := volumeStatusRun(h.ctx, &VolumeStatusOptions{IO: ios, Engine: h.engine, Now: time.Now, ID: "db"}); err != nil {
		t.Fatal(err)
	}
	var row string
	for _, l := range strings.Split(out.String(), "\n") {
		if strings.HasPrefix(l, "Expansion Pending") {
			row = l
		}
	}
	if row == "" {
		t.Fatalf("no Expansion Pending row:\n%s", out)
	}
	release := strings.Index(row, "`volctl nomad release db`")
	if release < 0 || strings.Contains(row[:release], "volctl reconcile") || strings.Contains(row, "the expand run again") {
		t.Errorf("Expansion Pending row of a volume handed over to Nomad:\n%s\nwant it to say the expansion waits for the take-back (`volctl nomad release db`), not advise the reconcile that just left it", row)
	}
}
