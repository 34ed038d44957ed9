package cli

import (
	"net/http"
	"strings"
	"testing"
)

// Nomad has volume db already (registered there by hand under another name) and refuses the
// update volctl sends, as Nomad 2.0.5 refuses to change a registered volume's name
// (CSIVolume.Merge: "unable to update volume: volume name cannot be updated"), its parameters,
// topology request, capacity below its own, or mount options while in use. Before, the
// command exited 1, which README gives to what running it again may finish, and said
// "`volctl nomad register db` again updates it": run again, it was refused again, every time,
// with Nomad's words alone. --dry-run exits 4 for the same refusal. Now the registration exits 4
// too, and says that Nomad keeps its copy, what shows how it differs, and the two ways on.
func TestNomadRegisterRefusedByNomadsCopyIsAConflict(t *testing.T) {
	h := nomadHarness(t)
	a := newFakeNomad(t)
	nomadHasDBFromBefore(t, h, a, map[string]any{"Name": "nomads-name"})
	a.setOnPut(func(w http.ResponseWriter, r *http.Request) (int, string) {
		return http.StatusInternalServerError, "rpc error: unable to update volume: volume name cannot be updated"
	})
	for _, run := range []string{"first", "again"} {
		_, _, err := registerIn(h, a)
		if ExitCode(err) != ExitConflict {
			t.Errorf("register (%s) refused by Nomad's copy: exit %d, want 4, as its --dry-run: %v", run, ExitCode(err), err)
		}
		for _, want := range []string{"volume name cannot be updated", "Nomad keeps its copy", "volctl nomad register --dry-run db",
			"nomad volume deregister -namespace default db", "volctl nomad release db"} {
			if err == nil || !strings.Contains(err.Error(), want) {
				t.Errorf("register (%s) refused by Nomad's copy: %v\nwant it to say %q", run, err, want)
			}
		}
		if err != nil && strings.Contains(err.Error(), "again updates it") {
			t.Errorf("register (%s) refused by Nomad's copy: %v\nsays running it again updates it, which Nomad refuses again", run, err)
		}
	}
}

// Nomad has db from before with no capacity; volctl's update sends its capacity, so Nomad's
// Register calls the controller's ControllerExpandVolume (expandVolume), and that RPC fails
// for a while (the controller's client is gone and Nomad's view of it stale: Nomad's own
// "CSI client error (retryable)"). Nomad wraps it "unable to update volume: unable to expand
// volume: ...". Running the command again, once the controller answers, goes through.
func TestNomadRegisterWhoseExpandFailsForAWhileIsNoConflict(t *testing.T) {
	h := nomadHarness(t)
	a := newFakeNomad(t)
	nomadHasDBFromBefore(t, h, a, map[string]any{})
	a.setOnPut(func(w http.ResponseWriter, r *http.Request) (int, string) {
		return http.StatusInternalServerError, "rpc error: unable to update volume: unable to expand volume: controller expand volume: CSI.ControllerExpandVolume could not find plugin: CSI client error (retryable): plugin hp for type csi-controller not found"
	})
	// The first run finds the volume not marked (hasNot), the second marked from before.
	for _, run := range []string{"first", "again"} {
		_, _, err := registerIn(h, a)
		if ExitCode(err) == ExitConflict {
			t.Errorf("register (%s) whose controller expand failed for a while: exit 4 (a conflict the same registration meets again), want 1 (running it again may finish it): %v", run, err)
		}
		if err != nil && strings.Contains(err.Error(), "refuses this registration again") {
			t.Errorf("register (%s) whose controller expand failed for a while: %v\nsays Nomad refuses it again, which a run once the controller answers does not", run, err)
		}
		if err == nil || !strings.Contains(err.Error(), "`volctl nomad register db` again") {
			t.Errorf("register (%s) whose controller expand failed for a while: %v\nwant it to say that running it again updates it", run, err)
		}
	}
	// Once the controller answers, the same command goes through.
	a.setOnPut(nil)
	if out, errOut, err := registerIn(h, a); err != nil {
		t.Errorf("register again once the controller answers: %s%s %v", out, errOut, err)
	}
}

// Volume db is handed over. Between volctl's read of Nomad's copy (this volume) and its
// registration, Nomad's copy is deregistered and another volume registered by the ID, of
// another external ID (someone else's storage). Nomad's Register refuses the update in
// CSIVolume.Merge: "unable to update volume: ... volume external ID cannot be updated". The
// error must not advise deregistering that volume in Nomad: it is someone else's.
func TestNomadRegisterRefusedAsAnotherVolumesIsNotAdvisedDeregistered(t *testing.T) {
	h := nomadHarness(t)
	a := newFakeNomad(t)
	if _, _, err := registerIn(h, a); err != nil {
		t.Fatal(err)
	}
	a.setOnPut(func(w http.ResponseWriter, r *http.Request) (int, string) {
		a.mu.Lock()
		defer a.mu.Unlock()
		node := []any{map[string]any{"Segments": map[string]any{"topology.hostpath.volctl.dev/node": "n1"}}}
		a.sent["default/db"] = map[string]any{"PluginID": "hp", "ExternalID": "someone-elses", "Topologies": node, "RequestedTopologies": map[string]any{"Required": node}}
		return http.StatusInternalServerError, "unable to update volume: 1 error occurred:\n\t* volume external ID cannot be updated\n\n"
	})
	_, _, err := registerIn(h, a)
	if err == nil {
		t.Fatal("register refused by Nomad: no error")
	}
	t.Logf("exit %d: %v", ExitCode(err), err)
	if strings.Contains(err.Error(), "nomad volume deregister") {
		t.Errorf("register refused as another volume's (Merge's external ID): %v\nadvises deregistering Nomad's volume of the ID, which is someone else's", err)
	}
	if ExitCode(err) != ExitConflict {
		t.Errorf("register refused as another volume's: exit %d, want 4 (refused again while that volume is there)", ExitCode(err))
	}
	for _, want := range []string{"another volume by the ID", "volctl nomad release --force db"} {
		if !strings.Contains(err.Error(), want) {
			t.Errorf("register refused as another volume's: %v\nwant it to say %q", err, want)
		}
	}
}
