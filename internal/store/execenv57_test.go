package store

import (
	"slices"
	"strings"
	"testing"

	"github.com/volctl/volctl/internal/spec"
)

// execPluginWith is plugin p declared with an exec block whose env holds TOKEN=token.
func execPluginWith(token string) *Plugin {
	return &Plugin{ID: "p", Type: spec.PluginMonolith, Socket: "/run/p.sock",
		Exec: &spec.Exec{Command: "/bin/p", Env: spec.Secrets{"TOKEN": token, "MODE": "fast"}}}
}

// secretValues is what the state holds as secrets now.
func secretValues(t *testing.T, s *Store) []string {
	t.Helper()
	var vs []string
	view(t, s, func(tx *Tx) (err error) {
		vs, err = tx.SecretValues()
		return err
	})
	return vs
}

// The values of a plugin's exec env its record no longer holds (registered again with another
// env, or without an exec block, or deregistered) stay secrets while a process started with
// them may run: before, the state dropped them at once, and the process the agent keeps under
// mounts echoing one had it printed whole. They go when the agent says which env the one
// process of the plugin runs with now (LetGoEnv), those of that env kept, and are scrubbed
// from the event log then as any secret leaving the state.
func TestValuesOfAnEarlierExecEnvAreKeptUntilLetGo(t *testing.T) {
	t.Parallel()
	s := newStore(t, WithForget(forgottenAsGone))
	update(t, s, func(tx *Tx) error { return tx.Plugins().Put(execPluginWith("tok-one")) })
	update(t, s, func(tx *Tx) error {
		return tx.Events().Append(&Event{Kind: "plugin-health", PluginID: "p", Message: "probe: tok-one refused"})
	})
	// Registered again with the same exec block: nothing kept.
	update(t, s, func(tx *Tx) error { return tx.Plugins().Put(execPluginWith("tok-one")) })
	if got := keptEnv(t, s); len(got) != 0 {
		t.Fatalf("kept %q after a registration with the same env; want none", got)
	}
	update(t, s, func(tx *Tx) error { return tx.Plugins().Put(execPluginWith("tok-two")) })
	update(t, s, func(tx *Tx) error { return tx.Plugins().Put(execPluginWith("tok-three")) })
	if got := keptEnv(t, s); !slices.Equal(got, []string{"tok-one", "tok-two"}) {
		t.Fatalf("kept %q; want the two earlier tokens (MODE, in every env, stays the record's)", got)
	}
	for _, v := range []string{"tok-one", "tok-two", "tok-three", "fast"} {
		if !slices.Contains(secretValues(t, s), v) {
			t.Errorf("secret values lack %q", v)
		}
	}
	// The agent's process runs the second env (started before the third was registered): the
	// first goes, the second stays.
	update(t, s, func(tx *Tx) error {
		n, err := tx.Plugins().LetGoEnv("p", map[string]string{"TOKEN": "tok-two", "MODE": "fast"})
		if n != 1 {
			t.Errorf("LetGoEnv let %d go; want 1", n)
		}
		return err
	})
	if got := keptEnv(t, s); !slices.Equal(got, []string{"tok-two"}) {
		t.Fatalf("kept %q after the process runs the second env; want it alone", got)
	}
	if ev := lastEvent(t, s); ev != "probe: [GONE] refused" {
		t.Errorf("the event echoing the token let go = %q; want it scrubbed", ev)
	}
	// Deregistered: the declared env's values are kept too, until no process runs.
	update(t, s, func(tx *Tx) error { return tx.Plugins().Delete("p") })
	if got := keptEnv(t, s); !slices.Equal(got, []string{"fast", "tok-three", "tok-two"}) {
		t.Fatalf("kept %q after the deregistration; want every value a process may run with", got)
	}
	var beyond bool
	view(t, s, func(tx *Tx) (err error) {
		beyond, err = tx.Plugins().HoldsEnvBeyond("p", nil)
		return err
	})
	if !beyond {
		t.Error("HoldsEnvBeyond(nil) = false with values kept")
	}
	update(t, s, func(tx *Tx) error { _, err := tx.Plugins().LetGoEnv("p", nil); return err })
	if got := secretValues(t, s); len(got) != 0 {
		t.Errorf("secret values after the last process stopped = %q; want none", got)
	}
	view(t, s, func(tx *Tx) (err error) {
		beyond, err = tx.Plugins().HoldsEnvBeyond("p", nil)
		return err
	})
	if beyond {
		t.Error("HoldsEnvBeyond(nil) = true with nothing kept")
	}
}

// keptEnv is the values exec_env_kept holds, sorted.
func keptEnv(t *testing.T, s *Store) []string {
	t.Helper()
	var out []string
	view(t, s, func(tx *Tx) error {
		rows, err := tx.query(`SELECT value FROM exec_env_kept ORDER BY value`)
		out, err = collect(rows, err, func(sc scanner) (string, error) {
			var v string
			return v, sc.Scan(&v)
		})
		return err
	})
	return out
}

// lastEvent is the newest event's message.
func lastEvent(t *testing.T, s *Store) string {
	t.Helper()
	var msg string
	view(t, s, func(tx *Tx) error {
		return tx.queryRow(`SELECT message FROM events ORDER BY id DESC LIMIT 1`).Scan(&msg)
	})
	return strings.TrimSpace(msg)
}
