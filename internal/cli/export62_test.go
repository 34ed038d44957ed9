package cli

import (
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"

	"github.com/hashicorp/hcl/v2"
	"github.com/hashicorp/hcl/v2/hclsyntax"

	"github.com/volctl/volctl/internal/engine"
	"github.com/volctl/volctl/internal/hostpath"
	"github.com/volctl/volctl/internal/spec"
)

// exportedPluginJob exports volume hv of volctl's hostpath plugin hp (served on node edge-7,
// by the agent's exec block) through the command as a user runs it, with extra flags, and
// returns the plugin's job file.
func exportedPluginJob(t *testing.T, extra ...string) string {
	t.Helper()
	h := newCLIHarness(t)
	root := t.TempDir()
	hostpathVolumeToExport(t, h, hostpath.Config{}, &spec.Exec{Command: "volctl",
		Args: []string{"plugin", "serve", "hostpath", "--root", root, "--node-id", "edge-7"}})
	out := filepath.Join(t.TempDir(), "out")
	args := append([]string{"export", "nomad", "hv", "--out", out, "--volctl-path", "/usr/local/bin/volctl"}, extra...)
	if code, _, errOut := h.runReported(args...); code != 0 {
		t.Fatalf("export nomad exit %d: %s", code, errOut)
	}
	src, err := os.ReadFile(filepath.Join(out, "plugin-hp.nomad.hcl"))
	if err != nil {
		t.Fatal(err)
	}
	if _, diags := hclsyntax.ParseConfig(src, "p", hcl.InitialPos); diags.HasErrors() {
		t.Fatal(diags.Error())
	}
	return string(src)
}

// The plugin job of volctl's hostpath plugin serves the volumes of one host (their directories
// under --root there, their topology naming --node-id edge-7): it is constrained to the Nomad
// client of this host, by its node name (this host's name unless --nomad-node says another).
// Before, a system job over every client with no constraint: each Nomad client ran `plugin
// serve hostpath --node-id edge-7` on its own empty --root and reported node edge-7's topology,
// so Nomad placed allocs, and sent a registration's or a publish's controller RPCs, where the
// volumes are not. Found by helper review62.
func TestExportedPluginJobRunsOnlyOnTheVolumesHost(t *testing.T) {
	host, err := os.Hostname()
	if err != nil {
		t.Skipf("this host's name cannot be read (%v): the default --nomad-node is it", err)
	}
	constraint := func(node string) string {
		return "constraint {\n    attribute = \"$${node.unique.name}\"\n    value     = " + strconv.Quote(node) + "\n  }"
	}
	if s := exportedPluginJob(t); !strings.Contains(s, constraint(host)) {
		t.Errorf("the hostpath plugin's job for node edge-7 is not constrained to this host's Nomad client (%q):\n%s", host, s)
	}
	if s := exportedPluginJob(t, "--nomad-node", "client-7"); !strings.Contains(s, constraint("client-7")) {
		t.Errorf("--nomad-node client-7 did not constrain the plugin job to it:\n%s", s)
	}
}

// --datacenter is "datacenters of the jobs", and the plugin job is one of the files export
// writes as a job: it gets them too. Before, only the groups' jobs did: the plugin's system job
// kept datacenters = ["*"], and ran (as node edge-7) in every datacenter of the cluster. Found
// by helper review62.
func TestExportDatacenterReachesThePluginJob(t *testing.T) {
	s := exportedPluginJob(t, "--datacenter", "dc1")
	if !strings.Contains(s, `datacenters = ["dc1"]`) {
		t.Errorf("export nomad --datacenter dc1 wrote the plugin job in other datacenters:\n%s", s)
	}
}

// A handover forced past a live local claim leaves that claim as it is: alloc local-0 keeps the
// volume staged and mounted here, and (volctl's own plugin staging a volume at one path only)
// Nomad's allocs are refused the volume until it goes, as the command's help says. The command
// says so: a note naming the alloc and its release command, and its line that volctl keeps the
// claim. Before, only "Registered ...; volctl no longer claims it", while volctl held local-0's
// claim. Found by helper review62.
func TestForcedHandoverNamesTheLiveClaimsItLeaves(t *testing.T) {
	h := nomadHarness(t)
	if _, err := h.e.Claim(h.ctx, engine.ClaimRequest{VolumeID: "db", Alloc: "local-0"}); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { h.e.Release(h.ctx, "db", "local-0") })
	r := newReplayNomad(t, registerStep(t, h, "volctl nomad register")...)
	out, errOut, err := runNomadRegister(h, r, func(o *NomadRegisterOptions) { o.Force = true })
	if err != nil {
		t.Fatalf("register --force: %v", err)
	}
	if !strings.Contains(errOut, `alloc(s) "local-0"`) || !strings.Contains(errOut, "`volctl volume release db --alloc local-0`") ||
		strings.Contains(out, "no longer claims it") || !strings.Contains(out, "keeps its 1 live local claim(s)") {
		t.Errorf("a handover forced past live claim local-0 does not name it, nor what becomes of it and of Nomad's allocs:\nstdout: %s\nstderr: %s", out, errOut)
	}
}
