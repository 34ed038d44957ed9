package cli

import (
	"encoding/json"
	"net/http"
	"strings"
	"sync/atomic"
	"testing"
)

// Every nomad subcommand on each class of failure, as README.md, docs/json.md and the commands'
// help say: exit 1 for Nomad unreachable or refusing the token and for a volume volctl does
// not have (running it again, once that is fixed, may do it), 4 for a conflict (Nomad has
// another volume by the ID, or the volume's storage as another volume; local claims; Nomad
// still having the volume at a release; Nomad refusing the registration for what its copy
// has); `nomad status` prints every volume and exits 1 when
// Nomad could not be asked about one, its --json saying why in `error`; `register --dry-run
// --json` prints a plan whose `error` or `would_fail` says it, exiting 1 or 4. Each run goes
// through the root command, as main reports it.
func TestNomadSubcommandsExitAsDocumented(t *testing.T) {
	type class struct {
		name string
		// nomad configures the fake Nomad (handed: db was handed over to it first).
		nomad func(t *testing.T, h *cliHarness, n *fakeNomad, handed bool)
		// addr, when set, is NOMAD_ADDR instead of the fake's.
		addr string
	}
	forbidden := func(t *testing.T, h *cliHarness, n *fakeNomad, handed bool) {
		n.srv.Config.Handler = http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			http.Error(w, "Permission denied", http.StatusForbidden)
		})
	}
	another := func(t *testing.T, h *cliHarness, n *fakeNomad, handed bool) {
		n.take("default", "db")
		n.mu.Lock()
		n.sent["default/db"] = map[string]any{"ExternalID": "someone-elses", "PluginID": "hp"}
		n.mu.Unlock()
	}
	sameStorage := func(t *testing.T, h *cliHarness, n *fakeNomad, handed bool) {
		info, err := h.e.Volume(h.ctx, "db")
		if err != nil {
			t.Fatal(err)
		}
		n.take("team", "db")
		n.mu.Lock()
		n.sent["team/db"] = map[string]any{"ExternalID": info.ExternalID, "PluginID": "hp"}
		n.mu.Unlock()
	}
	inUse := func(t *testing.T, h *cliHarness, n *fakeNomad, handed bool) {
		if !handed {
			h.claim(t, "db", "local-alloc") // a live local claim: register refuses without --force
		}
		// Handed over, Nomad still has it (release refuses).
	}
	// Nomad refuses to change its copy so (its name, as Nomad 2.0.5 answers): the same
	// registration is refused again, as --dry-run says (4).
	copyRefused := func(t *testing.T, h *cliHarness, n *fakeNomad, handed bool) {
		n.setOnPut(func(http.ResponseWriter, *http.Request) (int, string) {
			return http.StatusInternalServerError, "rpc error: unable to update volume: volume name cannot be updated"
		})
	}
	classes := []class{
		{name: "unreachable", addr: "http://127.0.0.1:1"},
		{name: "forbidden", nomad: forbidden},
		{name: "another volume by the ID", nomad: another},
		{name: "its storage as another volume", nomad: sameStorage},
		{name: "in use", nomad: inUse},
		{name: "Nomad refuses to change its copy", nomad: copyRefused},
		{name: "not found"},
	}
	type run struct {
		cmd    string // register, register --dry-run --json, release, status --json
		handed bool   // db handed over to the fake before
	}
	// want[class][cmd]: the exit status.
	want := map[string]map[string]int{
		"unreachable":                      {"register": 1, "register --dry-run --json": 1, "release": 1, "status --json": 1},
		"forbidden":                        {"register": 1, "register --dry-run --json": 1, "release": 1, "status --json": 1},
		"another volume by the ID":         {"register": 4, "register --dry-run --json": 4, "status --json": 0},
		"its storage as another volume":    {"register": 4, "register --dry-run --json": 4},
		"in use":                           {"register": 4, "register --dry-run --json": 4, "release": 4},
		"Nomad refuses to change its copy": {"register": 4},
		"not found":                        {"register": 1, "register --dry-run --json": 1, "release": 1, "status --json": 1},
	}
	for _, c := range classes {
		for cmd, code := range want[c.name] {
			t.Run(c.name+"/"+cmd, func(t *testing.T) {
				h := nomadHarness(t)
				n := newFakeNomad(t)
				handed := cmd == "release" && c.name != "not found"
				if handed {
					if _, _, err := registerIn(h, n); err != nil {
						t.Fatal(err)
					}
				}
				if c.nomad != nil {
					c.nomad(t, h, n, handed)
				}
				addr := n.srv.URL
				if c.addr != "" {
					addr = c.addr
				}
				t.Setenv("NOMAD_ADDR", addr)
				id := "db"
				if c.name == "not found" {
					id = "nosuch"
				}
				args := append([]string{"nomad"}, strings.Fields(cmd)...)
				args = append(args, id)
				got, out, errOut := h.runReported(args...)
				if got != code {
					t.Errorf("volctl %s: exit %d, want %d\nstdout: %s\nstderr: %s", strings.Join(args, " "), got, code, out, errOut)
				}
				if got != 0 && !strings.Contains(errOut, "Error:") {
					t.Errorf("volctl %s: exit %d without an error on stderr: %s", strings.Join(args, " "), got, errOut)
				}
				if c.name == "not found" && cmd == "status --json" {
					// As volume status: nothing printed, the error naming it.
					if out != "" || !strings.Contains(errOut, `"nosuch"`) {
						t.Errorf("volctl %s: stdout %q, stderr %q; want nothing printed and the error naming the volume", strings.Join(args, " "), out, errOut)
					}
					return
				}
				if !strings.Contains(cmd, "--json") {
					return
				}
				var objs []map[string]any
				if err := json.Unmarshal([]byte(out), &objs); err != nil || len(objs) != 1 {
					t.Fatalf("volctl %s: stdout %q (%v), want one JSON object in an array", strings.Join(args, " "), out, err)
				}
				o := objs[0]
				_, hasErr := o["error"]
				_, wouldFail := o["would_fail"]
				switch {
				case code == 1 && !hasErr:
					t.Errorf("volctl %s: want exit 1, and its JSON %v has no error saying why", strings.Join(args, " "), o)
				case code == 4 && !wouldFail:
					t.Errorf("volctl %s: want exit 4, and its JSON %v has no would_fail saying why", strings.Join(args, " "), o)
				}
			})
		}
	}
}

// nomad status naming a volume volctl does not have after one it has: the command asked Nomad
// about the first, then failed at the second, printing nothing (--json's array lost). Now it
// fails before Nomad is asked anything.
func TestNomadStatusOfAVolumeVolctlDoesNotHaveAsksNomadNothing(t *testing.T) {
	h := nomadHarness(t)
	n := newFakeNomad(t)
	var asked atomic.Int32
	inner := n.srv.Config.Handler
	n.srv.Config.Handler = http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		asked.Add(1)
		inner.ServeHTTP(w, r)
	})
	t.Setenv("NOMAD_ADDR", n.srv.URL)
	code, out, errOut := h.runReported("nomad", "status", "--json", "db", "nosuch")
	if code != ExitError || out != "" || !strings.Contains(errOut, `"nosuch"`) {
		t.Errorf("nomad status --json db nosuch: exit %d, stdout %q, stderr %q; want exit 1, nothing printed, the error naming nosuch", code, out, errOut)
	}
	if k := asked.Load(); k != 0 {
		t.Errorf("nomad status db nosuch asked Nomad %d time(s) before failing on nosuch", k)
	}
}
