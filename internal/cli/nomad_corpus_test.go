package cli

import (
	"context"
	"encoding/json"
	"io"
	"net/http"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"

	"github.com/hashicorp/nomad/api"

	"github.com/volctl/volctl/internal/csi"
	"github.com/volctl/volctl/internal/iostreams"
	"github.com/volctl/volctl/internal/nomadcorpus"
	"github.com/volctl/volctl/internal/spec"
)

// TestNomadRegisterSendsWhatNomadCLISends: for each CSI spec of the corpus of real Nomad specs,
// what `volctl nomad register` sends Nomad for the volume registered (or created) from the
// file is what `nomad volume register` (NOMAD_BIN's, against a server that records it) sends
// for the file `volctl export nomad` writes and, for a register spec, for the spec itself: ID,
// name, external ID, namespace, plugin, capabilities, mount options, secrets, parameters,
// context, capacity and topology. volctl's own differences are the
// documented ones: the namespace is always named, mount_options always sent, the legacy
// "single-node-reader" is sent as single-node-reader-only, and the legacy flat
// access_mode/attachment_mode pair (which this Nomad's CLI drops) as one capability.
func TestNomadRegisterSendsWhatNomadCLISends(t *testing.T) {
	bin := os.Getenv("NOMAD_BIN")
	if bin == "" {
		t.Skip("set NOMAD_BIN to a Nomad binary to compare what volctl registers with what the nomad CLI registers")
	}
	dir := nomadcorpus.Dir(t)
	files, err := filepath.Glob(filepath.Join(dir, "*.hcl"))
	if err != nil {
		t.Fatal(err)
	}
	compared := 0
	for _, file := range files {
		src, v, verb := readVolumeSpec(t, file)
		if v == nil {
			continue // a host volume spec, or a template for both
		}
		compared++
		t.Run(filepath.Base(file), func(t *testing.T) {
			ours, exported := volctlRegisters(t, bin, *v, verb)
			// The file volctl export nomad writes is registered by the nomad CLI as volctl
			// registers the volume itself.
			sameRegistration(t, "volctl export nomad's file, registered by the nomad CLI", ours, exported, "")
			if verb == spec.VerbRegister {
				// And as the nomad CLI registers the spec volctl read.
				sameRegistration(t, "the spec, registered by the nomad CLI", ours, nomadCLIRegisters(t, bin, file), string(src))
			}
		})
	}
	if compared == 0 {
		t.Fatalf("no CSI volume spec in the corpus at %s", dir)
	}
}

// TestExportOfCompatCorpusIsReadByNomadAsVolctlReadsIt: every volume spec of internal/spec's
// compatibility corpus (testdata/nomadcompat) that volctl reads, even one Nomad would refuse or
// read otherwise as written ("$${", the legacy flat capability pair:
// docs/specs.md), is handed to Nomad by `volctl export nomad` as a file the nomad CLI reads, and
// registers as `volctl nomad register` registers the volume.
func TestExportOfCompatCorpusIsReadByNomadAsVolctlReadsIt(t *testing.T) {
	bin := os.Getenv("NOMAD_BIN")
	if bin == "" {
		t.Skip("set NOMAD_BIN to a Nomad binary to check that Nomad reads what volctl exports of each volume spec it accepts")
	}
	files, err := filepath.Glob(filepath.Join("..", "spec", "testdata", "nomadcompat", "*"))
	if err != nil {
		t.Fatal(err)
	}
	compared := 0
	for _, file := range files {
		if ext := filepath.Ext(file); ext != ".hcl" && ext != ".json" {
			continue
		}
		_, v, verb := readVolumeSpec(t, file)
		if v == nil {
			continue // refused: the corpus's own tests say why
		}
		compared++
		t.Run(filepath.Base(file), func(t *testing.T) {
			ours, exported := volctlRegisters(t, bin, *v, verb)
			// mount_flags = [] is sent as [] (as the nomad CLI sends it for the spec itself) and
			// exported as no flags, which the nomad CLI sends as null: one value to Nomad, whose
			// CSIMountOptions.Equal compares flags with helper.SliceSetEq.
			for _, r := range []*api.CSIVolume{ours, exported} {
				if r.MountOptions != nil && len(r.MountOptions.MountFlags) == 0 {
					r.MountOptions.MountFlags = nil
				}
			}
			sameRegistration(t, "volctl export nomad's file, registered by the nomad CLI", ours, exported, "")
		})
	}
	if compared < 50 {
		t.Fatalf("only %d volume specs of the compatibility corpus read, want at least 50", compared)
	}
}

// readVolumeSpec reads file as a volume spec for register, or else for create: the spec's
// bytes, the volume (nil when neither verb takes it) and the verb.
func readVolumeSpec(t *testing.T, file string) ([]byte, *spec.Volume, spec.Verb) {
	t.Helper()
	src, err := os.ReadFile(file)
	if err != nil {
		t.Fatal(err)
	}
	for _, verb := range []spec.Verb{spec.VerbRegister, spec.VerbCreate} {
		if v, diags := spec.NewParser().ParseVolume(filepath.Base(file), src, verb); v != nil && !diags.HasErrors() {
			return src, v, verb
		}
	}
	return src, nil, spec.VerbAny
}

// sameRegistration compares what volctl registers (ours) with what the nomad CLI registers
// (theirs, of what), but for the differences documented. src is the spec theirs was read
// from when it is the corpus's own file (its plugin is not the harness's, and the legacy flat
// capability pair is one the nomad CLI drops), empty for the file volctl exported, which
// names the harness's plugin and writes every capability as a block: those are compared as
// they are (before, the plugin ID and, for a spec with the flat pair, the capabilities of an
// export were taken from volctl's own registration, and never compared).
func sameRegistration(t *testing.T, what string, ours, theirs *api.CSIVolume, src string) {
	t.Helper()
	ours, theirs = copyVolume(ours), copyVolume(theirs)
	// The namespace Nomad takes a volume without one into.
	if theirs.Namespace == "" {
		theirs.Namespace = spec.DefaultNamespace
	}
	for _, c := range theirs.RequestedCapabilities {
		if c.AccessMode == "single-node-reader" {
			c.AccessMode = api.CSIVolumeAccessModeSingleNodeReader
		}
	}
	if src != "" {
		theirs.PluginID = ours.PluginID // the corpus's plugin, not the harness's
		if theirs.RequestedCapabilities == nil && strings.Contains(src, "\naccess_mode") {
			theirs.RequestedCapabilities = ours.RequestedCapabilities // the legacy flat pair
		}
	}
	if theirs.MountOptions == nil {
		theirs.MountOptions = &api.CSIMountOptions{}
	}
	for _, v := range []*api.CSIVolume{ours, theirs} {
		if len(v.Parameters) == 0 {
			v.Parameters = nil
		}
		if len(v.Context) == 0 {
			v.Context = nil
		}
		if len(v.Secrets) == 0 {
			v.Secrets = nil
		}
	}
	for _, f := range []struct {
		name      string
		ours, has any
	}{
		{"ID", ours.ID, theirs.ID},
		{"Name", ours.Name, theirs.Name},
		{"PluginID", ours.PluginID, theirs.PluginID},
		{"ExternalID", ours.ExternalID, theirs.ExternalID},
		{"Namespace", ours.Namespace, theirs.Namespace},
		{"RequestedCapabilities", ours.RequestedCapabilities, theirs.RequestedCapabilities},
		{"MountOptions", ours.MountOptions, theirs.MountOptions},
		{"Secrets", ours.Secrets, theirs.Secrets},
		{"Parameters", ours.Parameters, theirs.Parameters},
		{"Context", ours.Context, theirs.Context},
		{"RequestedCapacityMin", ours.RequestedCapacityMin, theirs.RequestedCapacityMin},
		{"RequestedCapacityMax", ours.RequestedCapacityMax, theirs.RequestedCapacityMax},
		{"RequestedTopologies", ours.RequestedTopologies, theirs.RequestedTopologies},
	} {
		if !reflect.DeepEqual(f.ours, f.has) {
			a, _ := json.Marshal(f.ours)
			b, _ := json.Marshal(f.has)
			t.Errorf("%s: volctl sends %s, %s %s", f.name, a, what, b)
		}
	}
}

// copyVolume is a copy of v deep enough for sameRegistration to normalise.
func copyVolume(v *api.CSIVolume) *api.CSIVolume {
	b, _ := json.Marshal(v)
	var out api.CSIVolume
	json.Unmarshal(b, &out)
	return &out
}

// nomadCLIRegisters is the volume `nomad volume register file` sends.
func nomadCLIRegisters(t *testing.T, bin, file string) *api.CSIVolume {
	t.Helper()
	s := nomadcorpus.Register(bin, file)
	if s.Err != nil {
		t.Fatalf("nomad volume register %s: %v\n%s", file, s.Err, s.Out)
	}
	if !strings.HasPrefix(s.Path, "/v1/volume/csi/") {
		t.Fatalf("nomad volume register %s sent %q, not a CSI volume\n%s", file, s.Path, s.Out)
	}
	return registered(t, s.Body)
}

// volctlRegisters registers (or creates) v with volctl, on the harness's plugin, and returns
// what `volctl nomad register` sends Nomad for it, and what the nomad CLI sends for the file
// `volctl export nomad --include-secrets` writes for it.
func volctlRegisters(t *testing.T, bin string, v spec.Volume, verb spec.Verb) (ours, exported *api.CSIVolume) {
	t.Helper()
	h := newCLIHarness(t)
	v.PluginID = "mem"
	var err error
	if verb == spec.VerbRegister {
		h.mem.AddVolume(csi.Volume{ID: v.ExternalID, CapacityBytes: v.CapacityMin})
		_, err = h.e.RegisterVolume(h.ctx, v)
	} else {
		_, err = h.e.CreateVolume(h.ctx, v)
	}
	if err != nil {
		t.Fatal(err)
	}
	out := filepath.Join(t.TempDir(), "out")
	if _, stderr, err := runExportNomad(t, h, func(o *ExportNomadOptions) {
		o.Volumes, o.IncludeSecrets, o.OutDir, o.NoPluginJob = []string{v.ID}, true, out, true
	}); err != nil {
		t.Fatalf("export nomad: %v\n%s", err, stderr)
	}
	exported = nomadCLIRegisters(t, bin, filepath.Join(out, "volume-"+v.ID+".hcl"))
	a := newFakeNomad(t)
	inner := a.srv.Config.Handler
	a.srv.Config.Handler = http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if strings.HasPrefix(r.URL.Path, "/v1/plugin/csi/") { // the harness's driver
			w.Header().Set("X-Nomad-Index", "1")
			io.WriteString(w, `{"ID":"mem","Provider":"mem.csi.volctl.test","NodesHealthy":1,"NodesExpected":1}`)
			return
		}
		inner.ServeHTTP(w, r)
	})
	ios, _, _, _ := iostreams.Test()
	if err := nomadRegisterRun(context.Background(), &NomadRegisterOptions{IO: ios, Engine: h.engine, Nomad: a.client, Volumes: []string{v.ID}}); err != nil {
		t.Fatal(err)
	}
	// One registration, secrets or not: Nomad's read-back of it reads a copy, which leaves
	// the secrets Nomad holds as they are (nomad.Client.HandOver).
	if len(a.puts) != 1 {
		t.Fatalf("volctl sent %d registrations, want 1", len(a.puts))
	}
	return registered(t, []byte(a.puts[0])), exported
}

// registered is the one volume of a registration's body.
func registered(t *testing.T, body []byte) *api.CSIVolume {
	t.Helper()
	var req api.CSIVolumeRegisterRequest
	if err := json.Unmarshal(body, &req); err != nil || len(req.Volumes) != 1 {
		t.Fatalf("registration %s: %v", body, err)
	}
	return req.Volumes[0]
}
