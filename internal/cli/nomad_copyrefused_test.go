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
