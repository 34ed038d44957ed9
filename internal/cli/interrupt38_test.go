package cli

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/volctl/volctl/internal/csi"
	"github.com/volctl/volctl/internal/csi/csitest"
)

// TestInterruptedOperationsRecordTheSignal: each acting command stopped by SIGINT, SIGTERM or
// SIGHUP while its plugin holds the RPC (a claim in ControllerPublishVolume and in
// NodeStageVolume, a create, an expand in ControllerExpandVolume and in NodeExpandVolume, a
// snapshot's create and delete, `group run`, `group stop`, a detach, a volume's and a plugin's
// registration) exits 1 naming the signal and what is left, and the
// command its error names (the same again, or reconcile) finishes it. Two things said Go's
// "context canceled" instead: an interrupted `group run`, whose error named the signal in its
// last line, so main's SaySignal left its first line's `NodePublishVolume: context canceled`
// as it was; and what every interrupted operation left recorded, a claim's last error
// (`volume status`) and the event log (`volctl events`), read by whoever looks later: now
// "NodeStageVolume: SIGINT received" (engine.stopWords). The plugin blocks in the RPC until
// the test has sent the "signal" (the command's context ended with main's cause), no sleep.
func TestInterruptedOperationsRecordTheSignal(t *testing.T) {
	mem := csitest.NewMountingMemPlugin(t, csitest.DefaultMemConfig()) // it claims: skips where mounts are not allowed
	socket, e, volctl := serveHolding(t, mem)
	createSingleWriter(t, e, "db", "snapme", "grow")
	dir := t.TempDir()
	newSpec, groupSpec, regSpec := filepath.Join(dir, "new.hcl"), filepath.Join(dir, "g.hcl"), filepath.Join(dir, "reg.hcl")
	mem.AddVolume(csi.Volume{ID: "ext-old", CapacityBytes: 1 << 30})
	for file, text := range map[string]string{
		regSpec: `id = "old"
name = "old"
type = "csi"
plugin_id = "mem"
external_id = "ext-old"
capability {
  access_mode     = "single-node-writer"
  attachment_mode = "file-system"
}
`,
		newSpec: `id = "new"
name = "new"
type = "csi"
plugin_id = "mem"
capability {
  access_mode     = "single-node-writer"
  attachment_mode = "file-system"
}
`,
		groupSpec: `group "g" {
  volume "d" {
    type            = "csi"
    source          = "db"
    access_mode     = "single-node-writer"
    attachment_mode = "file-system"
  }
}
`} {
		if err := os.WriteFile(file, []byte(text), 0o600); err != nil {
			t.Fatal(err)
		}
	}
	for _, c := range []struct {
		rpc, signal string
		args        []string
		want        []string // in its stderr
		next        []string // finishes it: exit 0
		shows       []string // a command whose stdout, right after the stop, holds seen
		seen        string
	}{
		{rpc: "NodeStageVolume", signal: "SIGINT", args: []string{"volume", "claim", "db", "--alloc", "a"},
			want:  []string{`claim "db" for alloc "a": NodeStageVolume: SIGINT received (interrupted: the claim is left controller-published, not published; `},
			shows: []string{"volume", "status", "db", "--json"}, seen: `"last_error": "NodeStageVolume: SIGINT received"`,
			next: []string{"volume", "claim", "db", "--alloc", "a"}},
		{args: []string{"volume", "release", "db", "--alloc", "a"}},
		{rpc: "ControllerPublishVolume", signal: "SIGTERM", args: []string{"volume", "claim", "db", "--alloc", "b"},
			want:  []string{`claim "db" for alloc "b": ControllerPublishVolume: SIGTERM received (interrupted: the claim is left taken, not published; `},
			shows: []string{"volume", "status", "db"}, seen: "ControllerPublishVolume: SIGTERM received",
			next: []string{"reconcile"}},
		{rpc: "NodeUnstageVolume", signal: "SIGHUP", args: []string{"volume", "detach", "db", "--yes"},
			want: []string{`detach "db": alloc "b": release: NodeUnstageVolume: SIGHUP received (interrupted: the claim is left node-detached, releasing; `},
			next: []string{"reconcile"}},
		{rpc: "CreateVolume", signal: "SIGHUP", args: []string{"volume", "create", newSpec},
			want: []string{`create volume "new": CreateVolume: SIGHUP received (the create is recorded`},
			next: []string{"volume", "create", newSpec}},
		{rpc: "ControllerExpandVolume", signal: "SIGTERM", args: []string{"volume", "expand", "grow", "--size", "2GiB"},
			want: []string{`expand volume "grow": ControllerExpandVolume: SIGTERM received (the plugin may have expanded`},
			next: []string{"volume", "expand", "grow", "--size", "2GiB"}},
		{rpc: "CreateSnapshot", signal: "SIGINT", args: []string{"volume", "snapshot", "create", "snapme", "s1"},
			want: []string{`snapshot volume "snapme": snapshot "s1": CreateSnapshot: SIGINT received (the plugin may have made it`},
			next: []string{"reconcile"}},
		{rpc: "DeleteSnapshot", signal: "SIGHUP", args: []string{"volume", "snapshot", "delete", "mem", "s1", "--yes"},
			want:  []string{`delete snapshot "s1" of plugin "mem": DeleteSnapshot: SIGHUP received (the delete stays recorded`},
			shows: []string{"volume", "snapshot", "list"}, seen: "s1           snapme  s1    1.0 GiB  deleting",
			next: []string{"volume", "snapshot", "delete", "mem", "s1", "--yes"}},
		{rpc: "NodePublishVolume", signal: "SIGINT", args: []string{"group", "run", groupSpec},
			want: []string{`alloc "g[0]": claim "db" for alloc "g[0]": NodePublishVolume: SIGINT received (interrupted: the claim is left node-staged`,
				"interrupted (SIGINT received): the scale-down past its count was not done"},
			next: []string{"group", "run", groupSpec}},
		{rpc: "NodeUnpublishVolume", signal: "SIGTERM", args: []string{"group", "stop", "g"},
			want:  []string{`stop group "g": release "db" for alloc "g[0]": release: NodeUnpublishVolume: SIGTERM received (interrupted`},
			shows: []string{"group", "status", "g"}, seen: "unpublishing (needs reconcile)",
			next: []string{"group", "stop", "g"}},
		{rpc: "ValidateVolumeCapabilities", signal: "SIGTERM", args: []string{"volume", "register", regSpec},
			want: []string{`register volume "old": ValidateVolumeCapabilities: SIGTERM received (interrupted: nothing is registered; run the register again)`},
			next: []string{"volume", "register", regSpec}},
		{args: []string{"volume", "claim", "grow", "--alloc", "x"}},
		{rpc: "NodeExpandVolume", signal: "SIGINT", args: []string{"volume", "expand", "grow", "--size", "3GiB"},
			want:  []string{`NodeExpandVolume: SIGINT received (it stays owed: run ` + "`volctl volume expand grow --size 3GiB` again or `volctl reconcile`)"},
			shows: []string{"volume", "status", "grow"}, seen: "Node Expansion Owed = to 3.0 GiB",
			next: []string{"volume", "expand", "grow", "--size", "3GiB"}},
		{args: []string{"volume", "release", "grow", "--alloc", "x"}},
		{rpc: "GetPluginInfo", signal: "SIGINT", args: []string{"plugin", "register", "--id", "mem2", "--socket", socket},
			want: []string{`register plugin "mem2": fingerprint: GetPluginInfo: SIGINT received (interrupted: nothing is registered; run the register again)`},
			next: []string{"plugin", "register", "--id", "mem2", "--socket", socket}},
	} {
		cmd := "volctl " + strings.Join(c.args, " ")
		code, _, errOut := volctl(c.rpc, c.signal, c.args...)
		if c.rpc == "" {
			if code != ExitOK {
				t.Fatalf("%s: exit %d, stderr %q", cmd, code, errOut)
			}
			continue
		}
		if code != ExitError || strings.Contains(errOut, "context canceled") {
			t.Errorf("%s stopped by %s in %s: exit %d, stderr %q; want exit %d naming the signal, not Go's context canceled", cmd, c.signal, c.rpc, code, errOut, ExitError)
		}
		for _, w := range c.want {
			if !strings.Contains(errOut, w) {
				t.Errorf("%s stopped by %s in %s: stderr %q; want it to say %q", cmd, c.signal, c.rpc, errOut, w)
			}
		}
		if c.shows != nil {
			_, out, _ := volctl("", "", c.shows...)
			if !strings.Contains(out, c.seen) || strings.Contains(out, "context canceled") {
				t.Errorf("volctl %s after %s stopped by %s: %s\nwant it to hold %q, not Go's context canceled", strings.Join(c.shows, " "), cmd, c.signal, out, c.seen)
			}
		}
		if code, out, errOut := volctl("", "", c.next...); code != ExitOK {
			t.Errorf("volctl %s after %s stopped by %s: exit %d, %s%s; want it to finish", strings.Join(c.next, " "), cmd, c.signal, code, out, errOut)
		}
	}
	// A snapshot whose delete is recorded and unfinished is listed so, not as ready to use; one
	// beside it whose delete nobody began is not. Each is listed twice, under "mem" and under
	// "mem2", registered on its socket above, which lists it recorded by "mem".
	for _, name := range []string{"s2", "s3"} {
		if _, err := e.CreateSnapshot(context.Background(), "snapme", name, nil); err != nil {
			t.Fatal(err)
		}
	}
	volctl("DeleteSnapshot", "SIGINT", "volume", "snapshot", "delete", "mem", "s2", "--yes")
	if _, out, _ := volctl("", "", "volume", "snapshot", "list", "--json"); strings.Count(out, `"deleting": true`) != 2 || strings.Count(out, `"deleting": false`) != 2 {
		t.Errorf("volctl volume snapshot list --json after s2's delete was stopped:\n%s\nwant s2 deleting, s3 not", out)
	}
	volctl("", "", "reconcile")
	if _, out, _ := volctl("", "", "volume", "snapshot", "list", "--json"); strings.Contains(out, `"s2"`) || strings.Count(out, `"deleting": false`) != 2 {
		t.Errorf("volctl volume snapshot list --json after reconcile finished s2's delete:\n%s\nwant s2 gone, s3 not deleting", out)
	}
	// Nothing is left half-done, and the event log names each signal, never "context canceled".
	if _, out, _ := volctl("", "", "status"); !strings.Contains(out, "Claims: 0 live (0 read, 0 write), 0 not at rest") {
		t.Errorf("volctl status after it all:\n%s\nwant no claim left", out)
	}
	_, out, _ := volctl("", "", "events", "--json")
	for _, w := range []string{
		"claim left controller-published for reconcile: NodeStageVolume: SIGINT received",
		"create left for reconcile: CreateVolume: SIGHUP received",
		"expansion answer not read (to 2GiB): ControllerExpandVolume: SIGTERM received",
		`snapshot \"s1\" left for reconcile: CreateSnapshot: SIGINT received`,
		"claim left unpublishing for reconcile: NodeUnpublishVolume: SIGTERM received",
	} {
		if !strings.Contains(out, w) {
			t.Errorf("volctl events --json does not say %q:\n%s", w, out)
		}
	}
	if strings.Contains(out, "context canceled") {
		t.Errorf("volctl events --json says Go's context canceled for an interrupted operation:\n%s", out)
	}
}
