package cli

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/volctl/volctl/internal/csi"
	"github.com/volctl/volctl/internal/csi/csitest"
)

// TestFilterFailingAfterTheWorkExitsOne: an acting command whose --jq filter (or -t template)
// fails on its result did its work first, and exited 2, the code of a usage error, which every
// other use of it gives before anything is done (a flag, a spec, a template's fields): a
// script's `volctl volume claim db --alloc a --jq "$F" || case $? in 2) fix the filter` took
// the claim, kept, for one never made, and left the volume held. Now it is exit 1, as the same
// result lost to a full disk or a reader gone is, stderr saying what was done, which stands (and
// for a claim how to print its path again or release it). A release that released nothing, and
// a reconcile that did nothing, whose filter fails, did nothing: still 2.
func TestFilterFailingAfterTheWorkExitsOne(t *testing.T) {
	requireMount(t) // it claims
	h := newCLIHarness(t)
	other, _ := csitest.Serve(t, csitest.WithServer(csitest.NewMemPlugin(csitest.DefaultMemConfig())))
	dir := t.TempDir()
	files := map[string]string{
		"db.hcl": "id = \"db\"\nname = \"db\"\ntype = \"csi\"\nplugin_id = \"mem\"\ncapability {\n  access_mode = \"multi-node-multi-writer\"\n  attachment_mode = \"file-system\"\n}\n",
		// A volume the plugin has, made outside volctl (AddVolume, below).
		"r.hcl": "id = \"r\"\ntype = \"csi\"\nplugin_id = \"mem\"\nexternal_id = \"outside-1\"\ncapability {\n  access_mode = \"single-node-writer\"\n  attachment_mode = \"file-system\"\n}\n",
		"g.hcl": "group \"g\" {\n  volume \"d\" {\n    type = \"csi\"\n    source = \"db\"\n    access_mode = \"multi-node-multi-writer\"\n    attachment_mode = \"file-system\"\n  }\n}\n",
	}
	for name, text := range files {
		if err := os.WriteFile(filepath.Join(dir, name), []byte(text), 0o600); err != nil {
			t.Fatal(err)
		}
	}
	h.mem.AddVolume(csi.Volume{ID: "outside-1"})
	const fails = `error("no")` // a filter that compiles, and fails on any result
	claims := func() string {
		t.Helper()
		code, out, errOut := h.runReported("volume", "status", "db", "--jq", ".claims | length")
		if code != 0 {
			t.Fatalf("volume status db: exit %d, %s", code, errOut)
		}
		return strings.TrimSpace(out)
	}
	for _, s := range []struct {
		args   []string
		code   int
		want   []string // on stderr
		claims string   // db's claims after it ("" not read)
	}{
		{[]string{"plugin", "register", "--id", "other", "--socket", other}, ExitError, []string{`plugin "other" registered; only printing it failed: --jq `}, ""},
		{[]string{"volume", "create", filepath.Join(dir, "db.hcl")}, ExitError, []string{`volume "db" created; only printing it failed: --jq `}, "0"},
		{[]string{"volume", "register", filepath.Join(dir, "r.hcl")}, ExitError, []string{`volume "r" registered; only printing it failed: --jq `}, ""},
		{[]string{"volume", "claim", "db", "--alloc", "a"}, ExitError, []string{`claim "db" for alloc "a" published at `, "only printing it failed: --jq ",
			"the claim stands: `volctl volume claim db --alloc a` prints its target path again, `volctl volume release db --alloc a` releases it"}, "1"},
		{[]string{"volume", "expand", "db", "--size", "2GiB"}, ExitError, []string{`volume "db" expanded; only printing it failed: --jq `}, ""},
		{[]string{"volume", "snapshot", "create", "db", "s1"}, ExitError, []string{`snapshot "s1" (ID `, "only printing it failed: --jq "}, ""},
		{[]string{"volume", "release", "db", "--alloc", "a"}, ExitError, []string{`claim "db" for alloc "a" released; only printing it failed: --jq `}, "0"},
		// Released already: nothing was done, and the filter is the only thing wrong.
		{[]string{"volume", "release", "db", "--alloc", "a"}, ExitUsage, []string{"--jq "}, "0"},
		{[]string{"group", "run", filepath.Join(dir, "g.hcl")}, ExitError, []string{`group "g" run: 1 of 1 allocs have their volumes; only printing it failed: --jq `}, "1"},
		{[]string{"group", "stop", "g"}, ExitError, []string{`group "g" stopped; released "db" for alloc "g[0]"; only printing it failed: --jq `}, "0"},
		{[]string{"volume", "claim", "db", "--alloc", "b", "--json"}, ExitOK, nil, "1"},
		{[]string{"volume", "detach", "db", "--yes"}, ExitError, []string{`volume "db": 1 claim(s) released; only printing it failed: --jq `}, "0"},
		// Nothing to do: nothing was done.
		{[]string{"reconcile"}, ExitUsage, []string{"reconcile: 0 action(s) done"}, "0"},
	} {
		args := s.args
		if s.code != ExitOK {
			args = append(append([]string{}, args...), "--jq", fails)
		}
		code, _, errOut := h.runReported(args...)
		cmd := "volctl " + strings.Join(args, " ")
		if code != s.code {
			t.Errorf("%s: exit %d, want %d; stderr %q", cmd, code, s.code, errOut)
		}
		for _, want := range s.want {
			if !strings.Contains(errOut, want) {
				t.Errorf("%s: stderr %q; want it to say %q", cmd, errOut, want)
			}
		}
		if s.claims != "" {
			if got := claims(); got != s.claims {
				t.Errorf("after %s: volume db has %s claim(s), want %s", cmd, got, s.claims)
			}
		}
	}
}
