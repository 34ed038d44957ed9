package main

import (
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/volctl/volctl/internal/csi/csitest"
	"github.com/volctl/volctl/internal/nomad"
)

// startMemPluginInNomad is the world of an end-to-end test against a real Nomad agent that
// needs no mounts: the agent, and an in-memory CSI plugin of the test's (node n1) that volctl
// uses as plugin id, and Nomad runs as id too (a raw_exec task whose socket is a link to the
// test's: runLinkedPlugins). volctl's requests go to the agent itself.
func startMemPluginInNomad(t *testing.T, id string) (w *nomadWorld, socket string) {
	t.Helper()
	w, socket, _ = startMemPluginInNomadWith(t, id, nil)
	return w, socket
}

// startMemPluginInNomadWith is startMemPluginInNomad with the plugin's configuration changed by
// configure (when not nil) from the default, node n1's; it returns the plugin too.
func startMemPluginInNomadWith(t *testing.T, id string, configure func(*csitest.MemConfig)) (w *nomadWorld, socket string, mem *csitest.MemPlugin) {
	t.Helper()
	if os.Getenv("NOMAD_BIN") == "" {
		t.Skip("set NOMAD_BIN to a Nomad binary to run the end-to-end test against a real agent")
	}
	w = makeNomadWorld(t, 3*time.Minute)
	socket, mem = w.startMemPlugin(id, configure)
	return w, socket, mem
}

// startMemPlugin is startMemPluginInNomadWith in the world w, made but not started (its agent
// configured first: chroot).
func (w *nomadWorld) startMemPlugin(id string, configure func(*csitest.MemConfig)) (socket string, mem *csitest.MemPlugin) {
	t := w.t
	t.Helper()
	cfg := csitest.DefaultMemConfig()
	cfg.NodeID = "n1"
	if configure != nil {
		configure(&cfg)
	}
	mem = csitest.NewMemPlugin(cfg)
	socket = filepath.Join(w.dir, "mem.sock")
	csitest.ServeAt(t, socket, csitest.WithServer(mem))
	w.stepTo("start nomad agent -dev on 127.0.0.1")
	w.startAgent()
	w.nomadAddr = w.agentAddr
	w.stepTo(fmt.Sprintf("run plugin %q in Nomad, a link to the test's", id))
	w.runLinkedPlugins(id+"-plugin", socket, []string{id})
	w.volctl(0, "plugin", "register", "--id", id, "--socket", socket)
	return socket, mem
}

// createMemDB has volctl create volume db (dbSpec) on plugin mem, and returns its external ID.
func (w *nomadWorld) createMemDB() (ext string) {
	w.t.Helper()
	w.writeFile("db.hcl", strings.Replace(dbSpec, `plugin_id = "hp"`, `plugin_id = "mem"`, 1))
	w.volctl(0, "volume", "create", filepath.Join(w.dir, "db.hcl"))
	return strings.TrimSpace(w.volctl(0, "volume", "status", "db", "-t", "{{.external_id}}"))
}

// editInNomad registers Nomad's copy of volume db (plugin mem, external ID ext, node n1's
// topology) from a file name whose fields between the external ID and the topology are body,
// as `nomad volume register`: an edit made in Nomad after the handover.
func (w *nomadWorld) editInNomad(name, ext, body string) {
	w.t.Helper()
	w.writeFile(name, fmt.Sprintf(`id = "db"
name = "db"
type = "csi"
plugin_id = "mem"
external_id = %q
%s
topology_request {
  required {
    topology {
      segments = {
        "topology.hostpath.volctl.dev/node" = "n1"
      }
    }
  }
}
`, ext, body))
	if out, err := w.tryNomad("volume", "register", filepath.Join(w.dir, name)); err != nil {
		w.t.Fatalf("nomad volume register of %s: %v\n%s", name, err, out)
	}
}

// stopMemPluginInNomad stops what startMemPluginInNomad started, and checks that nothing is
// left running.
func (w *nomadWorld) stopMemPluginInNomad(id string) {
	w.t.Helper()
	w.stepTo("stop the plugin's job and the agent; nothing left running")
	if w.persistent {
		// Its client leaves its tasks running, and their alloc dirs mounted, when it stops
		// (-dev's stops and removes them): the job stopped, its allocs collected first.
		w.stopJob(id + "-plugin")
		w.putJSON("/v1/client/gc", nil)
		w.poll("the plugin's alloc dirs to be removed", 60*time.Second, func() bool {
			mi, err := os.ReadFile("/proc/self/mountinfo")
			return err == nil && !strings.Contains(string(mi), " "+filepath.Join(w.dataDir, "alloc")+"/")
		})
	} else {
		w.nomad("job", "stop", "-detach", id+"-plugin")
	}
	w.stopAgent()
	w.checkClean()
}

// TestNomadStatusSaysWhatNomadChanged hands a volume over to a real Nomad, edits Nomad's copy
// with `nomad volume register` (another access mode, a file system type, a larger capacity,
// which Nomad expands the volume to through the plugin), and checks that `volctl nomad status
// --json` and `volctl nomad register --dry-run` say, field by field, what Nomad's copy has and
// what volctl's has (before, they named the fields only), and that once volctl's copy is sent
// back, the capacity Nomad keeps is said to differ from volctl's record (before, nothing).
//
// Opt-in: NOMAD_BIN names a Nomad binary. No mounts.
func TestNomadStatusSaysWhatNomadChanged(t *testing.T) {
	w, _ := startMemPluginInNomad(t, "mem")
	w.stepTo("volctl creates volume db and hands it over")
	ext := w.createMemDB()
	if out := w.volctl(0, "nomad", "register", "db"); !strings.Contains(out, `Registered volume "db"`) {
		t.Fatalf("register: %s", out)
	}
	statusOf := func() (differs []string, ds []nomad.Difference) {
		t.Helper()
		var st []struct {
			Registered  bool               `json:"registered"`
			Differs     []string           `json:"differs"`
			Differences []nomad.Difference `json:"differences"`
		}
		if err := json.Unmarshal([]byte(w.volctl(0, "nomad", "status", "db", "--json")), &st); err != nil || len(st) != 1 || !st[0].Registered {
			t.Fatalf("nomad status --json: %v, %+v", err, st)
		}
		return st[0].Differs, st[0].Differences
	}
	if differs, ds := statusOf(); len(differs) > 0 || len(ds) > 0 {
		t.Fatalf("nomad status just after the handover: differs %v, differences %+v; want none", differs, ds)
	}

	w.stepTo("nomad volume register edits Nomad's copy: another access mode, fs_type xfs, capacity_min 20MiB")
	w.editInNomad("edited.hcl", ext, `capacity_min = "20MiB"
capability {
  access_mode     = "single-node-reader-only"
  attachment_mode = "file-system"
}
mount_options {
  fs_type = "xfs"
}`)
	want := map[string][2]string{
		"capabilities":  {`["single-node-reader-only"/"file-system"]`, `["single-node-writer"/"file-system"]`},
		"mount_options": {`fs_type "xfs", no mount flags`, `fs_type "", no mount flags`},
		"capacity":      {"min 20MiB, max none", "min 10MiB, max none"},
		// Nomad expanded the volume through the plugin for the larger capacity_min.
		"capacity_bytes": {"20MiB", "10MiB"},
	}
	check := func(what string, ds []nomad.Difference) {
		t.Helper()
		got := map[string][2]string{}
		for _, d := range ds {
			got[d.Field] = [2]string{d.Nomad, d.Volctl}
		}
		for f, v := range want {
			if got[f] != v {
				t.Errorf("%s: the difference in %s is %q; want Nomad's %q and volctl's %q (all: %+v)", what, f, got[f], v[0], v[1], ds)
			}
		}
	}
	differs, ds := statusOf()
	check("nomad status --json", ds)
	if len(ds) != len(differs) {
		t.Errorf("nomad status --json: differs %v, differences %+v: one each", differs, ds)
	}
	var plans []struct {
		Differences []nomad.Difference `json:"differences"`
	}
	if err := json.Unmarshal([]byte(w.volctl(0, "nomad", "register", "db", "--dry-run", "--json")), &plans); err != nil || len(plans) != 1 {
		t.Fatalf("register --dry-run --json: %v", err)
	}
	check("register --dry-run --json", plans[0].Differences)

	w.stepTo("volctl nomad register sends volctl's back; only the capacity Nomad expanded the volume to differs")
	out := w.volctl(0, "nomad", "register", "db")
	if !strings.Contains(out, `Updated volume "db"`) {
		t.Fatalf("register again: %s", out)
	}
	// It says what it replaced of Nomad's copy, field by field (before, only "Updated").
	for _, f := range []string{"capabilities", "mount_options", "capacity"} {
		if d := fmt.Sprintf("%s: Nomad's %s; volctl's %s", f, want[f][0], want[f][1]); !strings.Contains(out, d) {
			t.Errorf("register over Nomad's edited copy: %s\nwant it to say what it replaced: %q", out, d)
		}
	}
	// Nomad keeps the capacity it expanded the volume to, whatever a registration asks: the
	// storage is that large, and volctl's record of it is behind (before, "no difference").
	if differs, ds := statusOf(); len(differs) != 1 || len(ds) != 1 || ds[0] != (nomad.Difference{Field: "capacity_bytes", Nomad: "20MiB", Volctl: "10MiB"}) {
		t.Errorf("nomad status after volctl's copy was sent again: differs %v, differences %+v; want only capacity_bytes, Nomad's 20MiB and volctl's 10MiB", differs, ds)
	}
	w.stepTo("nomad volume deregister; volctl nomad release takes the volume back at the size Nomad grew it to")
	w.nomad("volume", "deregister", "db")
	// The record was left at the size handed over (before, volume status said 10MiB): the
	// take-back asks the plugin, which lists the volume at 20MiB.
	if out := w.volctl(0, "nomad", "release", "db"); !strings.Contains(out, `Volume "db" is 20MiB as its plugin lists it, grown while in Nomad (volctl had 10MiB): recorded`) {
		t.Errorf("release of a volume Nomad grew: %s\nwant it to say the size recorded", out)
	}
	if got := strings.TrimSpace(w.volctl(0, "volume", "status", "db", "-t", "{{.capacity_bytes}}")); got != "20971520" {
		t.Errorf("capacity_bytes after the take-back = %s, want 20971520", got)
	}
	w.stopMemPluginInNomad("mem")
}
