package main

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"maps"
	"net/http"
	"net/url"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	csipb "github.com/container-storage-interface/spec/lib/go/csi"
	"github.com/hashicorp/nomad/api"
	"google.golang.org/grpc"
	"google.golang.org/protobuf/proto"

	"github.com/volctl/volctl/internal/csi"
	"github.com/volctl/volctl/internal/csi/csitest"
	"github.com/volctl/volctl/internal/engine"
	"github.com/volctl/volctl/internal/nomadcorpus"
	"github.com/volctl/volctl/internal/spec"
)

// TestNomadCorpusRoundTrip registers every CSI volume spec of the corpus of real Nomad specs
// (../shared/compat/nomad-specs) that volctl takes, for register or else for create, in a real
// Nomad agent through `volctl nomad register`, reads each back through Nomad's API, and
// compares every field volctl parsed with what Nomad stored: ID, name, namespace, plugin,
// external ID, capabilities, mount options (the fs_type; the flags only as present, since
// Nomad answers them as one "[REDACTED]"), topology (Nomad's topology_request and the
// volume's topologies), parameters, context, capacity, and the secrets, which Nomad never
// answers but sends its plugin: as ControllerValidateVolumeCapabilities carried them at the
// registration. A volume volctl created has the plugin's external ID, context, capacity and
// accessible topology, which are compared with volctl's record instead of the spec.
//
// Every plugin ID of the corpus runs in Nomad as a csi_plugin task (raw_exec) whose socket is
// a link to one in-memory plugin of this test, which volctl uses under the same IDs: Nomad
// validates each registration against the volume volctl registered or created there. Each
// spec gets its own volctl state and Nomad namespace (two specs share an ID).
//
// Opt-in: NOMAD_BIN names a Nomad binary. No mounts.
func TestNomadCorpusRoundTrip(t *testing.T) {
	if os.Getenv("NOMAD_BIN") == "" {
		t.Skip("set NOMAD_BIN to a Nomad binary to register the corpus of Nomad volume specs in a real Nomad and compare what it stores")
	}
	dir := nomadcorpus.Dir(t)
	w := makeNomadWorld(t, 3*time.Minute)

	type entry struct {
		file string
		verb spec.Verb
		vol  spec.Volume
	}
	var corpus []entry
	files, err := filepath.Glob(filepath.Join(dir, "*.hcl"))
	if err != nil {
		t.Fatal(err)
	}
	plugins := map[string]bool{}
	for _, f := range files {
		src, err := os.ReadFile(f)
		if err != nil {
			t.Fatal(err)
		}
		for _, verb := range []spec.Verb{spec.VerbRegister, spec.VerbCreate} {
			if v, diags := spec.NewParser().ParseVolume(filepath.Base(f), src, verb); v != nil && !diags.HasErrors() && v.Type == "csi" {
				corpus = append(corpus, entry{f, verb, *v})
				plugins[v.PluginID] = true
				break
			}
		}
	}
	registers := 0
	for _, e := range corpus {
		if e.verb == spec.VerbRegister {
			registers++
		}
	}
	if registers < 5 {
		t.Fatalf("only %d specs of the corpus at %s read for register, want at least 5", registers, dir)
	}

	// One in-memory plugin, which records what each ValidateVolumeCapabilities carried.
	cfg := csitest.DefaultMemConfig()
	cfg.NodeID = "n1"
	mem := csitest.NewMemPlugin(cfg)
	var mu sync.Mutex
	var nomadAsks atomic.Bool                                          // while volctl nomad register runs: the calls are Nomad's
	validated := map[string]*csipb.ValidateVolumeCapabilitiesRequest{} // by external ID: the last one
	created := map[string]*csipb.CreateVolumeRequest{}                 // by name: the last one
	var expanded []string                                              // the external IDs of ControllerExpandVolume calls
	record := func(ctx context.Context, req any, info *grpc.UnaryServerInfo, handler grpc.UnaryHandler) (any, error) {
		if r, ok := req.(*csipb.ControllerExpandVolumeRequest); ok {
			mu.Lock()
			expanded = append(expanded, r.GetVolumeId())
			mu.Unlock()
		}
		if r, ok := req.(*csipb.CreateVolumeRequest); ok {
			mu.Lock()
			created[r.GetName()] = proto.Clone(r).(*csipb.CreateVolumeRequest)
			mu.Unlock()
		}
		if r, ok := req.(*csipb.ValidateVolumeCapabilitiesRequest); ok {
			mu.Lock()
			validated[r.GetVolumeId()] = proto.Clone(r).(*csipb.ValidateVolumeCapabilitiesRequest)
			mu.Unlock()
			// Confirmed without the capabilities echoed: Nomad's client compares each
			// requested capability with every confirmed one (plugins/csi compareCapabilities),
			// so a volume of two capabilities that differ (file-system and block-device,
			// two access modes) is refused from a plugin that echoes them all. No
			// capabilities confirmed are compared with none. (volctl's own calls, which
			// check the echo, are answered whole.)
			resp, err := handler(ctx, req)
			if r, ok := resp.(*csipb.ValidateVolumeCapabilitiesResponse); ok && r.GetConfirmed() != nil && nomadAsks.Load() {
				r.Confirmed.VolumeCapabilities = nil
			}
			return resp, err
		}
		return handler(ctx, req)
	}
	socket := w.serveMemAndStart(mem, record, "start nomad agent -dev on 127.0.0.1")

	w.stepTo("run every plugin ID of the corpus in Nomad, each a link to the test's plugin")
	w.runLinkedPlugins("corpus-plugins", socket, slices.Sorted(maps.Keys(plugins)))

	updated := false // a created volume updated in Nomad after its handover
	for i, e := range corpus {
		name := filepath.Base(e.file)
		v := e.vol
		w.stepTo(fmt.Sprintf("%s: volume %s %q of plugin %q, then volctl nomad register", name, e.verb, v.ID, v.PluginID))
		w.state = filepath.Join(w.dir, fmt.Sprintf("state%d", i))
		ns := fmt.Sprintf("corpus%d", i)
		w.putJSON("/v1/namespace/"+ns, map[string]string{"Name": ns})
		w.env = []string{"NOMAD_NAMESPACE=" + ns}
		w.volctl(0, "plugin", "register", "--id", v.PluginID, "--socket", socket)
		verb := "create"
		if e.verb == spec.VerbRegister {
			verb = "register"
			mem.AddVolume(csi.Volume{ID: v.ExternalID, CapacityBytes: v.CapacityMin})
		}
		own, ownSecrets := w.nomadsOwnWay(name, e.verb, v, ns, &nomadAsks, func(ext string) map[string]string {
			mu.Lock()
			defer mu.Unlock()
			if e.verb == spec.VerbCreate {
				r := created[v.Name]
				delete(created, v.Name)
				return r.GetSecrets()
			}
			r := validated[ext]
			delete(validated, ext)
			return r.GetSecrets()
		}, e.file)
		w.volctl(0, "volume", verb, e.file)
		var info engine.VolumeInfo
		if err := json.Unmarshal([]byte(w.volctl(0, "volume", "status", v.ID, "--json")), &info); err != nil {
			t.Fatalf("%s: volume status --json: %v", name, err)
		}
		// The context as the plugin made it: volctl's output replaces a secret's value
		// wherever it appears (juicefs's name is one of its secrets).
		if pv, ok := mem.Volume(info.ExternalID); ok && e.verb == spec.VerbCreate {
			info.Context = pv.Context
		}
		nomadAsks.Store(true)
		out := w.volctl(0, "nomad", "register", v.ID)
		nomadAsks.Store(false)
		if !strings.Contains(out, fmt.Sprintf("Registered volume %q", v.ID)) {
			t.Fatalf("%s: volctl nomad register: %s", name, out)
		}
		// stored is Nomad's copy of the volume after what, with the validation Nomad sent the
		// plugin for it.
		stored := func(after string) (api.CSIVolume, *csipb.ValidateVolumeCapabilitiesRequest) {
			var got api.CSIVolume
			if !w.getJSON("/v1/volume/csi/"+url.PathEscape(v.ID)+"?namespace="+ns, &got) {
				t.Fatalf("%s: Nomad has no volume %q in namespace %s after %s", name, v.ID, ns, after)
			}
			mu.Lock()
			defer mu.Unlock()
			sent := validated[got.ExternalID]
			delete(validated, got.ExternalID)
			return got, sent
		}
		got, sent := stored("its registration")
		compareStored(t, name, e.verb, v, info, ns, &got, sent)
		compareWays(t, name, e.verb, own, ownSecrets, &got, sent.GetSecrets())

		// The volume's export, registered by Nomad's own CLI over the copy volctl registered:
		// what Nomad's reader makes of the file volctl writes must be what it stored from
		// volctl's registration, the secrets the plugin gets included.
		exported := filepath.Join(w.dir, fmt.Sprintf("export%d", i))
		w.volctl(0, "export", "nomad", v.ID, "--include-secrets", "--out", exported)
		nomadAsks.Store(true)
		w.nomad("volume", "register", "-namespace", ns, filepath.Join(exported, "volume-"+v.ID+".hcl"))
		nomadAsks.Store(false)
		again, sentAgain := stored("`nomad volume register` of its export")
		if sentAgain == nil {
			t.Errorf("%s: Nomad sent the plugin no ValidateVolumeCapabilities for `nomad volume register` of the export", name)
		}
		// A register spec whatever the volume's verb: the external ID and context are the
		// plugin's, in both copies.
		compareWays(t, name+" (its export)", spec.VerbRegister, &again, sentAgain.GetSecrets(), &got, sent.GetSecrets())
		if e.verb == spec.VerbCreate && !updated {
			// An update in Nomad of the volume volctl handed over that asks for no more than
			// it has (a capacity_max set, say): Nomad expands a volume when the capacity_min
			// asked is above the capacity it has, and one registered without a capacity had
			// 0, so the plugin was asked to expand a volume to the size it had (and a plugin
			// that cannot expand got the update refused).
			updated = true
			upd := got
			upd.RequestedCapacityMax = 2 * max(got.Capacity, got.RequestedCapacityMin)
			upd.MountOptions = &api.CSIMountOptions{} // Nomad answers flags as [REDACTED]
			if v.MountOptions != nil {
				upd.MountOptions.FSType = v.MountOptions.FSType
			}
			nomadAsks.Store(true)
			w.putJSON("/v1/volume/csi/"+url.PathEscape(v.ID)+"?namespace="+ns, api.CSIVolumeRegisterRequest{Volumes: []*api.CSIVolume{&upd}})
			nomadAsks.Store(false)
			mu.Lock()
			if slices.Contains(expanded, got.ExternalID) {
				t.Errorf("%s: an update in Nomad asking for no more than the volume has (capacity_min %d, capacity_max set) sent its plugin a ControllerExpandVolume: Nomad has its capacity as %d", name, upd.RequestedCapacityMin, got.Capacity)
			}
			mu.Unlock()
		}
	}

	w.stepTo("a volume Nomad has without its topology keeps none: --dry-run, nomad status and the registration name it")
	// The corpus's register spec with a topology, registered in Nomad by hand from a copy
	// without its topology_request (Nomad's Merge drops an update's topology when the
	// volume has none).
	var topo *entry
	topoNS := ""
	for i := range corpus {
		if e := &corpus[i]; e.verb == spec.VerbRegister && e.vol.TopologyRequest != nil && len(e.vol.TopologyRequest.Required) > 0 {
			topo, topoNS = e, fmt.Sprintf("corpus%d", i)
		}
	}
	if topo == nil {
		t.Fatalf("no register spec with a topology in the corpus at %s", dir)
	}
	w.state = filepath.Join(w.dir, "state-topology")
	w.putJSON("/v1/namespace/topology", map[string]string{"Name": "topology"})
	w.env = []string{"NOMAD_NAMESPACE=topology"}
	w.volctl(0, "plugin", "register", "--id", topo.vol.PluginID, "--socket", socket)
	w.volctl(0, "volume", "register", topo.file)
	b, err := os.ReadFile(topo.file)
	if err != nil {
		t.Fatal(err)
	}
	src := string(b)
	start := strings.Index(src, "topology_request {")
	end := strings.Index(src[start:], "\n}\n")
	if start < 0 || end < 0 {
		t.Fatalf("%s: no topology_request block to leave out", topo.file)
	}
	// Nomad has the volume's storage already, as the corpus step registered it in its own
	// namespace: a registration in this one too would make two Nomad volumes of one storage,
	// which volctl refuses, naming the other; that copy goes before this step's own.
	if out := w.volctl(4, "nomad", "register", topo.vol.ID, "--dry-run"); !strings.Contains(out, "registered as another volume") || !strings.Contains(out, topoNS) {
		t.Errorf("dry run of a volume whose storage Nomad has in namespace %s: %s", topoNS, out)
	}
	w.nomad("volume", "deregister", "-namespace", topoNS, topo.vol.ID)
	w.writeFile("no-topology.hcl", src[:start]+src[start+end+3:])
	w.nomad("volume", "register", "-namespace", "topology", filepath.Join(w.dir, "no-topology.hcl"))
	if out := w.volctl(4, "nomad", "register", topo.vol.ID, "--dry-run"); !strings.Contains(out, "Nomad's copy has no topology") {
		t.Errorf("dry run of a volume Nomad has without its topology: %s", out)
	}
	if out := w.volctl(0, "nomad", "status", topo.vol.ID, "-t", `{{range .}}{{range .differs}}{{.}} {{end}}{{end}}`); !strings.Contains(out, "topology") {
		t.Errorf("nomad status of a volume Nomad has without its topology says it differs in %q", out)
	}
	nomadAsks.Store(true)
	out := w.volctl(1, "nomad", "register", topo.vol.ID)
	nomadAsks.Store(false)
	if !strings.Contains(out, "topologies none") || !strings.Contains(out, "nomad volume deregister") {
		t.Errorf("register of a volume Nomad has without its topology: %s", out)
	}
	var got api.CSIVolume
	if !w.getJSON("/v1/volume/csi/"+url.PathEscape(topo.vol.ID)+"?namespace=topology", &got) || len(got.Topologies) != 0 {
		t.Errorf("Nomad's copy after the registration: topologies %v; want none still (Nomad keeps a registered volume's)", got.Topologies)
	}

	w.stepTo("stop the plugins' job and the agent; nothing left running")
	w.env = nil
	w.nomad("job", "stop", "-detach", "corpus-plugins")
	w.stopAgent()
	w.checkClean()
}

// compareStored compares what Nomad stored (got) for the corpus spec name, read for verb as v,
// with the volume volctl parsed (and, for one it created, info: what the plugin made), and
// sent, the ValidateVolumeCapabilities Nomad sent the plugin at the registration, with its
// secrets.
func compareStored(t *testing.T, name string, verb spec.Verb, v spec.Volume, info engine.VolumeInfo, ns string, got *api.CSIVolume, sent *csipb.ValidateVolumeCapabilitiesRequest) {
	t.Helper()
	differ := func(field string, nomad, volctl any) {
		t.Helper()
		a, _ := json.Marshal(nomad)
		b, _ := json.Marshal(volctl)
		t.Errorf("%s: Nomad stored %s %s; volctl parsed %s", name, field, a, b)
	}
	str := func(field, nomad, volctl string) {
		t.Helper()
		if nomad != volctl {
			differ(field, nomad, volctl)
		}
	}
	str("ID", got.ID, v.ID)
	str("name", got.Name, v.Name)
	str("namespace", got.Namespace, ns)
	str("plugin_id", got.PluginID, v.PluginID)
	ext, context, capMin := v.ExternalID, v.Context, v.CapacityMin
	wantTopo := v.TopologyRequest
	if verb == spec.VerbCreate {
		// What the plugin made: volctl's record.
		ext, context, capMin = info.ExternalID, info.Context, info.CapacityBytes
		wantTopo = nil
		if len(info.AccessibleTopology) > 0 {
			wantTopo = &spec.TopologyRequest{Required: info.AccessibleTopology}
		}
	}
	str("external_id", got.ExternalID, ext)

	var caps []spec.Capability
	for _, c := range got.RequestedCapabilities {
		caps = append(caps, spec.Capability{AccessMode: spec.AccessMode(c.AccessMode), AttachmentMode: spec.AttachmentMode(c.AttachmentMode)})
	}
	if !slices.Equal(caps, v.Capabilities) {
		differ("capabilities", caps, v.Capabilities)
	}

	fs, flags := "", 0
	if mo := got.MountOptions; mo != nil {
		fs, flags = mo.FSType, len(mo.MountFlags)
	}
	wantFS, wantFlags := "", 0
	if mo := v.MountOptions; mo != nil {
		wantFS, wantFlags = mo.FSType, len(mo.MountFlags)
	}
	str("mount_options.fs_type", fs, wantFS)
	if (flags > 0) != (wantFlags > 0) {
		differ("mount_options.mount_flags (how many; Nomad answers any as one [REDACTED])", flags, wantFlags)
	}

	if !sameMap(got.Parameters, v.Parameters) {
		differ("parameters", got.Parameters, v.Parameters)
	}
	if !sameMap(got.Context, context) {
		differ("context", got.Context, context)
	}
	if sent == nil {
		t.Errorf("%s: Nomad sent its plugin no ControllerValidateVolumeCapabilities for external ID %q at the registration", name, got.ExternalID)
	} else if !sameMap(sent.GetSecrets(), v.Secrets.Plain()) {
		t.Errorf("%s: Nomad sent its plugin secrets with keys %q; volctl parsed keys %q", name, slices.Sorted(maps.Keys(sent.GetSecrets())), slices.Sorted(maps.Keys(v.Secrets)))
	}

	if got.RequestedCapacityMin != capMin {
		differ("capacity_min", got.RequestedCapacityMin, capMin)
	}
	if got.RequestedCapacityMax != v.CapacityMax {
		differ("capacity_max", got.RequestedCapacityMax, v.CapacityMax)
	}

	if !sameTopologies(requested(got.RequestedTopologies, false), wantTopo, false) ||
		!sameTopologies(requested(got.RequestedTopologies, true), wantTopo, true) {
		differ("topology_request", got.RequestedTopologies, wantTopo)
	}
	var required []spec.Topology
	if wantTopo != nil {
		required = wantTopo.Required
	}
	if !sameTopologies(topologiesOf(got.Topologies), &spec.TopologyRequest{Required: required}, false) {
		differ("topologies (the volume's, a registered one's being its topology_request.required)", got.Topologies, required)
	}
}

// nomadsOwnWay gives Nomad the corpus spec file as its own CLI does (`nomad volume register`,
// or `nomad volume create` for a spec volctl reads for create) in namespace ns, reads the
// volume back from Nomad's API, and takes it out again (deregister, or delete: the plugin's
// volume goes), so that volctl's registration of the same storage after it is no twin.
// sentSecrets gives the secrets the plugin got from Nomad for it (of ValidateVolumeCapabilities
// by external ID at a registration, of CreateVolume by name at a creation).
func (w *nomadWorld) nomadsOwnWay(name string, verb spec.Verb, v spec.Volume, ns string, nomadAsks *atomic.Bool, sentSecrets func(ext string) map[string]string, file string) (*api.CSIVolume, map[string]string) {
	w.t.Helper()
	cmd, undo := "register", "deregister"
	if verb == spec.VerbCreate {
		cmd, undo = "create", "delete"
	}
	nomadAsks.Store(true)
	out, err := w.tryNomad("volume", cmd, "-namespace", ns, file)
	nomadAsks.Store(false)
	if err != nil {
		// docs/specs.md: the legacy flat access_mode/attachment_mode pair, which volctl reads
		// as one capability, Nomad's CLI drops, and its server refuses the volume.
		src, rerr := os.ReadFile(file)
		if rerr == nil && regexp.MustCompile(`(?m)^access_mode\s*=`).Match(src) && strings.Contains(out, "must include at least one capability block") {
			w.t.Logf("%s: `nomad volume %s` refuses the legacy flat access_mode, as docs/specs.md says: %s", name, cmd, strings.TrimSpace(out))
			return nil, nil
		}
		// docs/specs.md: the old spelling "single-node-reader", which volctl reads as
		// single-node-reader-only, Nomad's CLI sends as written, and its server refuses the
		// volume once it asks the plugin to validate it.
		if rerr == nil && regexp.MustCompile(`"single-node-reader"`).Match(src) && strings.Contains(out, "unknown volume access mode: single-node-reader") {
			w.t.Logf("%s: `nomad volume %s` refuses the old spelling single-node-reader, as docs/specs.md says: %s", name, cmd, strings.TrimSpace(out))
			return nil, nil
		}
		w.t.Fatalf("%s: nomad volume %s -namespace %s: %v\n%s", name, cmd, ns, err, out)
	}
	var got api.CSIVolume
	if !w.getJSON("/v1/volume/csi/"+url.PathEscape(v.ID)+"?namespace="+ns, &got) {
		w.t.Fatalf("%s: Nomad has no volume %q in namespace %s after `nomad volume %s`", name, v.ID, ns, cmd)
	}
	secrets := sentSecrets(got.ExternalID)
	w.nomad("volume", undo, "-namespace", ns, v.ID)
	return &got, secrets
}

// compareWays compares, field by field, what Nomad stored of the corpus spec name given to it
// by its own CLI (own, whose plugin got ownSecrets) and by `volctl nomad register` (bridged,
// bridgedSecrets): every difference is the bridge's, but for those docs/specs.md gives of a
// volume volctl created: the plugin's external ID and context, which are its answer to
// another CSI name (volctl's own, unique per creation, where Nomad sends the spec's name),
// and capacity_min, the size the plugin made where the spec asked none. Nomad's own create
// stores a nil topology before the plugin's (Nomad 2.0.5), left out.
func compareWays(t *testing.T, name string, verb spec.Verb, own *api.CSIVolume, ownSecrets map[string]string, bridged *api.CSIVolume, bridgedSecrets map[string]string) {
	t.Helper()
	if own == nil {
		return // Nomad refused the file itself
	}
	type fields struct {
		ID, Name, Namespace, PluginID, ExternalID string
		Capabilities                              []*api.CSIVolumeCapability
		FSType                                    string
		MountFlags                                []string
		Secrets                                   []string // keys: Nomad answers none, so those the plugin got
		Parameters, Context                       map[string]string
		TopologyRequest                           *api.CSITopologyRequest
		Topologies                                []*api.CSITopology
		CapacityMin, CapacityMax, Capacity        int64
	}
	of := func(v *api.CSIVolume, secrets map[string]string) fields {
		f := fields{ID: v.ID, Name: v.Name, Namespace: v.Namespace, PluginID: v.PluginID, ExternalID: v.ExternalID,
			Capabilities: v.RequestedCapabilities, Secrets: slices.Sorted(maps.Keys(secrets)),
			Parameters: v.Parameters, Context: v.Context, TopologyRequest: v.RequestedTopologies, Topologies: v.Topologies,
			CapacityMin: v.RequestedCapacityMin, CapacityMax: v.RequestedCapacityMax, Capacity: v.Capacity}
		if mo := v.MountOptions; mo != nil {
			f.FSType, f.MountFlags = mo.FSType, mo.MountFlags
		}
		f.Topologies = slices.DeleteFunc(slices.Clone(f.Topologies), func(t *api.CSITopology) bool { return t == nil })
		if verb == spec.VerbCreate {
			f.ExternalID, f.Context = "(the plugin's answer to volctl's CSI name)", nil
		}
		return f
	}
	a, b := of(own, ownSecrets), of(bridged, bridgedSecrets)
	if verb == spec.VerbCreate && a.CapacityMin == 0 && b.CapacityMin == bridged.Capacity {
		b.CapacityMin = 0 // the size made, sent as capacity_min (docs/specs.md)
	}
	if !maps.Equal(ownSecrets, bridgedSecrets) {
		t.Errorf("%s: the plugin got other secret values from Nomad's registration of volctl's (keys %q) than of `nomad volume %s` (keys %q)", name, b.Secrets, verb, a.Secrets)
	}
	ja, _ := json.Marshal(a)
	jb, _ := json.Marshal(b)
	var ma, mb map[string]json.RawMessage
	json.Unmarshal(ja, &ma)
	json.Unmarshal(jb, &mb)
	for _, k := range slices.Sorted(maps.Keys(ma)) {
		if string(ma[k]) != string(mb[k]) {
			t.Errorf("%s: %s: `nomad volume %s` stored %s; volctl nomad register stored %s", name, k, verb, ma[k], mb[k])
		}
	}
}

// sameMap compares two string maps, none and empty alike.
func sameMap(a, b map[string]string) bool { return len(a) == 0 && len(b) == 0 || maps.Equal(a, b) }

// requested is Nomad's required (or preferred) topologies as volctl's.
func requested(tr *api.CSITopologyRequest, preferred bool) []spec.Topology {
	if tr == nil {
		return nil
	}
	if preferred {
		return topologiesOf(tr.Preferred)
	}
	return topologiesOf(tr.Required)
}

func topologiesOf(ts []*api.CSITopology) []spec.Topology {
	var out []spec.Topology
	for _, t := range ts {
		if t != nil {
			out = append(out, spec.Topology{Segments: t.Segments})
		}
	}
	return out
}

// sameTopologies compares ts with want's required (or preferred) topologies, in order.
func sameTopologies(ts []spec.Topology, want *spec.TopologyRequest, preferred bool) bool {
	var w []spec.Topology
	if want != nil {
		w = want.Required
		if preferred {
			w = want.Preferred
		}
	}
	return slices.EqualFunc(ts, w, func(a, b spec.Topology) bool { return sameMap(a.Segments, b.Segments) })
}

// runLinkedPlugins runs job, a job of one raw_exec csi_plugin task (monolith) per plugin ID of
// ids, each a link to the test's plugin at socket, and waits until each plugin is healthy.
func (w *nomadWorld) runLinkedPlugins(job, socket string, ids []string) {
	w.t.Helper()
	var b strings.Builder
	fmt.Fprintf(&b, "job %q {\n  datacenters = [\"*\"]\n  group \"plugins\" {\n", job)
	for i, id := range ids {
		// Nomad gives a raw_exec plugin task the host path of the socket it dials in
		// CSI_ENDPOINT (unix://PATH); the task links it to the test's socket and stays.
		fmt.Fprintf(&b, `    task "p%d" {
      driver = "raw_exec"
      config {
        command = "/bin/sh"
        args    = ["-c", "ln -sf %s \"$(echo \"$CSI_ENDPOINT\" | cut -c8-)\" && while sleep 1; do :; done"]
      }
      csi_plugin {
        id        = %q
        type      = "monolith"
        mount_dir = "/csi"
        # The host's paths: a raw_exec task sees the host's file system, so the staging and
        # target paths Nomad gives the plugin must be the host's for its node calls.
        stage_publish_base_dir = %q
      }
    }
`, i, socket, id, filepath.Join(w.dataDir, "client", "csi", "monolith", id))
	}
	b.WriteString("  }\n}\n")
	w.writeFile(job+".nomad.hcl", b.String())
	w.nomad("job", "run", "-detach", filepath.Join(w.dir, job+".nomad.hcl"))
	for _, id := range ids {
		w.poll(fmt.Sprintf("plugin %q to be healthy in Nomad", id), 60*time.Second, func() bool {
			var p struct{ NodesHealthy, ControllersHealthy int }
			return w.getJSON("/v1/plugin/csi/"+url.PathEscape(id), &p) && p.NodesHealthy == 1 && p.ControllersHealthy == 1
		})
	}
}

// putJSON PUTs v as JSON to the agent's path and fails the test unless it answers 200.
func (w *nomadWorld) putJSON(path string, v any) {
	w.t.Helper()
	b, err := json.Marshal(v)
	if err != nil {
		w.t.Fatal(err)
	}
	req, err := http.NewRequestWithContext(w.ctx, http.MethodPut, w.agentAddr+path, strings.NewReader(string(b)))
	if err != nil {
		w.t.Fatal(err)
	}
	resp, err := w.secure.do(req)
	if err != nil {
		w.t.Fatal(err)
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		body, _ := io.ReadAll(io.LimitReader(resp.Body, 4096))
		w.t.Fatalf("PUT %s: %s: %s", path, resp.Status, body)
	}
}
