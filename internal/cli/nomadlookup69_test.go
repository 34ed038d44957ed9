package cli

import (
	"os"
	"path/filepath"

	"context"
	"github.com/volctl/volctl/internal/spec"
	"net/http"
	"strings"
	"sync/atomic"
	"testing"

	"github.com/volctl/volctl/internal/iostreams"
)

// `volctl nomad register` of several volumes of one plugin, whose first lookup of that plugin
// Nomad answers with a 500 that is no sign it stopped answering (a server's RPC to the leader
// failing for a moment): the volumes after the first are each asked again, as the list of
// Nomad's volumes is after a 500 (TestTwinsListFailedOnceIsAskedAgain: "one failed answer
// failing no other"). The answer was kept for the command (pluginReady's plugins), the error
// too: every later volume of the plugin failed with the first one's 500, said as Nomad's answer
// about it, though Nomad was never asked, and none was registered. Found by helper review69.
func TestPluginLookupFailedOnceIsAskedAgain(t *testing.T) {
	h := nomadHarness(t)
	ids := manyVolumes(t, h, 2) // db, v1, v2 on plugin hp
	n := newFakeNomad(t)
	var lookups atomic.Int32
	n.srv.Config.Handler = http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if strings.HasPrefix(r.URL.Path, "/v1/plugin/csi/") && lookups.Add(1) == 1 {
			w.Header().Set("Content-Type", "text/plain")
			http.Error(w, "rpc error: failed to get conn: dial tcp 10.0.0.2:4647: i/o timeout", http.StatusInternalServerError)
			return
		}
		n.serve(w, r)
	})
	ios, _, out, errOut := iostreams.Test()
	err := nomadRegisterRun(context.Background(), &NomadRegisterOptions{IO: ios, Engine: h.engine, Nomad: n.client, Volumes: ids})
	if err == nil || !strings.Contains(err.Error(), `volume "db"`) {
		t.Fatalf("register: %v, want volume db's plugin lookup failure", err)
	}
	for _, id := range []string{"v1", "v2"} {
		if !n.has("default", id) {
			t.Errorf("volume %q not registered after one failed lookup of its plugin for volume db (plugin lookups: %d)\nstdout: %s\nstderr: %s\nerr: %v",
				id, lookups.Load(), out, errOut, err)
		}
	}
	if got := marked(t, h, ids); len(got) != 2 {
		t.Errorf("marked %v, want v1 and v2", got)
	}
}

// A group's job goes to the namespace of the volumes it uses; a per_alloc volume block uses
// SOURCE[0] .. SOURCE[count-1] only. Export counted as the group's every exported volume whose
// ID merely starts with "SOURCE[" (export.go's namespace loop): a group of count 1 using
// data[0] (default namespace), exported beside an unrelated volume data[archive] of namespace
// prod, was refused as using "volumes of 2 namespaces", nothing written. Found by helper
// review69.
func TestGroupNamespaceIsOfItsOwnAllocsVolumes(t *testing.T) {
	h := newCLIHarness(t)
	file := perAllocGroupFile(t, 1, "data")
	h.createVolume(t, "data[0]", spec.SingleNodeWriter)
	if _, err := h.e.CreateVolume(h.ctx, spec.Volume{ID: "data[archive]", Name: "archive", Namespace: "prod", Type: "csi", PluginID: "mem",
		Capabilities: []spec.Capability{{AccessMode: spec.SingleNodeWriter, AttachmentMode: spec.FileSystem}}}); err != nil {
		t.Fatal(err)
	}
	var out string
	_, stderr, err := runExportNomad(t, h, func(o *ExportNomadOptions) {
		o.GroupFiles = []string{file}
		o.Volumes = []string{"data[archive]"}
		o.NoPluginJob = true
		out = o.OutDir
	})
	if err != nil {
		t.Fatalf("export of group web (using data[0] only) beside volume data[archive] of namespace prod: %v\nstderr: %s", err, stderr)
	}
	job, err := os.ReadFile(filepath.Join(out, "job-web.nomad.hcl"))
	if err != nil {
		t.Fatal(err)
	}
	if strings.Contains(string(job), `"prod"`) {
		t.Errorf("group web's job put in namespace prod, where its volume data[0] is not:\n%s", job)
	}
}
