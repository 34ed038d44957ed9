package engine

import (
	"errors"
	"os"
	"testing"

	"github.com/volctl/volctl/internal/csi"
	"github.com/volctl/volctl/internal/csi/csitest"
	"github.com/volctl/volctl/internal/store"
)

// `plugin register` from another process registers the plugin ID again, for another driver,
// while `volume create` is connecting to the first driver (held in its GetPluginInfo: the
// socket file changed since the fingerprint was recorded, so the connection fingerprints
// again), before the create's intent is recorded; no volume uses the plugin yet, so nothing
// refuses the re-registration. The create must not record the volume on the plugin ID, which
// now names a driver that never saw it: a conflict naming the plugin, nothing recorded, no
// CreateVolume sent to either driver. Nor may the create's connection write the first driver's
// fingerprint over the row registered meanwhile (it pins the plugin's driver: written back,
// the re-registration's driver would be taken for an impostor on its own socket).
// And once the intent is recorded (held in CreateVolume), the volume uses the plugin, and the
// re-registration for another driver is refused instead: the create finishes.
func TestVolumeCreateOvertakenByPluginReregisteredForAnotherDriver(t *testing.T) {
	t.Parallel()
	for _, samePath := range []bool{false, true} {
		t.Run(map[bool]string{false: "another socket", true: "another driver on the socket path"}[samePath], func(t *testing.T) {
			h := newHarness(t, nil)
			d := h.anotherDriver(samePath)
			// The socket file changed since it was fingerprinted: the create's connection
			// fingerprints again, and is held there.
			if err := os.Chmod(h.socket, 0o700); err != nil {
				t.Fatal(err)
			}
			other := h.otherProcess()
			gate := make(chan struct{})
			h.faults.Inject(csi.RPCGetPluginInfo, csitest.Fault{Gate: gate, Times: 1})
			done := make(chan error, 1)
			go func() { _, err := h.e.CreateVolume(h.ctx, volume("v")); done <- err }()
			h.waitInFlight(gate, done)
			rerr := d.reregister(h, other)
			close(gate)
			d.overtaken(h, "create", <-done, rerr)
			if n, m := h.faults.Calls(csi.RPCCreateVolume), d.faults.Calls(csi.RPCCreateVolume); n+m != 0 {
				t.Errorf("CreateVolume sent %d time(s) to the first driver, %d to the second", n, m)
			}
			p, perr := viewOne(h.ctx, other.store, func(tx *store.Tx) (store.Plugin, error) { return tx.Plugins().Get("mem") })
			if perr != nil || p.Fingerprint.Provider != d.name {
				t.Errorf("plugin mem's stored driver after the create: %q, %v; want the driver registered meanwhile, %q, not the create's fingerprint written over it",
					p.Fingerprint.Provider, perr, d.name)
			}
		})
	}
	t.Run("held in CreateVolume", func(t *testing.T) {
		h := newHarness(t, nil)
		d := h.anotherDriver(false)
		other := h.otherProcess()
		gate := make(chan struct{})
		h.faults.Inject(csi.RPCCreateVolume, csitest.Fault{Gate: gate, Times: 1})
		done := make(chan error, 1)
		go func() { _, err := h.e.CreateVolume(h.ctx, volume("v")); done <- err }()
		h.waitInFlight(gate, done)
		rerr := d.reregister(h, other)
		close(gate)
		if err := <-done; err != nil {
			t.Fatalf("create: %v", err)
		}
		if !errors.Is(rerr, ErrConflict) {
			t.Errorf("register plugin mem again as another driver while volume v is being created on it: %v; want a conflict", rerr)
		}
		if v, err := h.e.Volume(h.ctx, "v"); err != nil || v.State != "ready" || v.PluginID != "mem" {
			t.Errorf("volume v: %+v, %v; want it ready on mem", v, err)
		}
	})
}
