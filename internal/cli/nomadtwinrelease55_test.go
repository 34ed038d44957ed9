package cli

import (
	"strings"
	"testing"
)

// TestNomadReleaseWhileNomadHasTheStorageAsAnotherVolumeIsRefused: volume db is handed over to
// Nomad (namespace default); in Nomad its storage is then registered again as another volume,
// moved to namespace team (`nomad volume deregister db`, then `nomad volume register -namespace
// team` of the same file) or renamed db2. Nomad still has the storage, its allocs free to claim
// it. `volctl nomad release db` asked only for db in namespace default, got Nomad's 404 and took
// the volume back: volctl would then claim it beside Nomad's allocs, two orchestrators on one
// storage, what `nomad register` refuses (Twins). The take-back is refused too (exit 4), naming
// the volume Nomad has it as, and the mark stays.
func TestNomadReleaseWhileNomadHasTheStorageAsAnotherVolumeIsRefused(t *testing.T) {
	for _, to := range []string{"team/db", "default/db2"} {
		t.Run(to, func(t *testing.T) {
			h := nomadHarness(t)
			n := newFakeNomad(t)
			if _, _, err := registerIn(h, n); err != nil {
				t.Fatal(err)
			}
			n.mu.Lock()
			sent := n.sent["default/db"]
			delete(n.vols, "default/db")
			n.vols[to] = true
			n.sent[to] = sent
			n.mu.Unlock()

			_, err := runNomadRelease(h, n.client, nil)
			if !handedOver(t, h) {
				t.Fatalf("release took volume db back (err %v) while Nomad has its storage as volume %s", err, to)
			}
			if ExitCode(err) != ExitConflict {
				t.Errorf("release: %v (exit %d), want exit 4", err, ExitCode(err))
			}
			ns, id, _ := strings.Cut(to, "/")
			for _, want := range []string{`has no volume by that ID, but has the volume's storage registered as another volume`, `volume "` + id + `" in namespace ` + ns, "nomad volume deregister -namespace " + ns + " " + id, "volctl nomad release db"} {
				if err == nil || !strings.Contains(err.Error(), want) {
					t.Errorf("release refused: %v; want it to say %q", err, want)
				}
			}
			// Once Nomad lets go of it there too, the volume is taken back.
			n.mu.Lock()
			delete(n.vols, to)
			n.mu.Unlock()
			if _, err := runNomadRelease(h, n.client, nil); err != nil || handedOver(t, h) {
				t.Errorf("release once Nomad has the storage under no ID: %v (still marked: %v)", err, handedOver(t, h))
			}
		})
	}
}
