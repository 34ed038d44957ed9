package nomad

import (
	"cmp"
	"context"
	"encoding/json"
	"maps"
	"net/http"
	"net/http/httptest"
	"reflect"
	"slices"
	"strconv"
	"strings"
	"sync"
	"testing"

	"github.com/hashicorp/nomad/api"

	"github.com/volctl/volctl/internal/spec"
)

// mergingNomad is a Nomad holding one registered volume, which it updates on a registration as
// Nomad's CSIVolume.Register does (structs.CSIVolume.Merge, then expandVolume for the
// capacity): capabilities, mount options (not in use) and secrets replaced; a name or
// parameters that are sent and differ refused ("volume name cannot be updated", "volume
// parameters cannot be updated", a 500); the capacity
// taken when one is sent. The context is replaced by the one sent, empty or not, as Nomad
// before 1.9.6 (and 1.8.10, 1.7.18) did; keepContext keeps it when none is sent, as later ones
// do (GH-24922).
//
// A read is answered as Nomad answers it: a copy of the volume (state.CSIVolumeByID returns
// vol.Copy()), its secrets dropped and its mount flags, however many, one "[REDACTED]"
// (csiVolumeExt, which on a Nomad before 1.11.1 sanitized in place — GH-27176 — but in place
// of that copy: what Nomad holds is left as it is). Without a volume (none), a read is
// answered 404 and a registration takes the volume sent.
type mergingNomad struct {
	keepContext bool
	none        bool
	mu          sync.Mutex
	vol         api.CSIVolume
	puts        int
}

func (n *mergingNomad) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	n.mu.Lock()
	defer n.mu.Unlock()
	w.Header().Set("X-Nomad-Index", strconv.Itoa(7+n.puts))
	if r.Method == http.MethodGet && r.URL.Path == "/v1/volumes" { // every namespace's
		stubs := []api.CSIVolumeListStub{}
		if !n.none {
			stubs = append(stubs, api.CSIVolumeListStub{ID: n.vol.ID, Namespace: n.vol.Namespace, PluginID: n.vol.PluginID, ExternalID: n.vol.ExternalID})
		}
		json.NewEncoder(w).Encode(stubs)
		return
	}
	if r.Method == http.MethodGet {
		if n.none {
			http.Error(w, "volume not found", http.StatusNotFound)
			return
		}
		answer := n.vol
		answer.Secrets = nil
		if mo := n.vol.MountOptions; mo != nil {
			answer.MountOptions = &api.CSIMountOptions{FSType: mo.FSType}
			if len(mo.MountFlags) > 0 {
				answer.MountOptions.MountFlags = []string{"[REDACTED]"}
			}
		}
		json.NewEncoder(w).Encode(answer)
		return
	}
	var req api.CSIVolumeRegisterRequest
	if err := json.NewDecoder(r.Body).Decode(&req); err != nil || len(req.Volumes) != 1 {
		http.Error(w, "bad request", http.StatusBadRequest)
		return
	}
	n.puts++
	upd := req.Volumes[0]
	if n.none {
		n.vol, n.none = *upd, false
		if len(n.vol.Topologies) == 0 && upd.RequestedTopologies != nil {
			n.vol.Topologies = upd.RequestedTopologies.Required // a registered volume's topology
		}
		w.Write([]byte(`{}`))
		return
	}
	if upd.Name != "" && upd.Name != n.vol.Name {
		http.Error(w, "unable to update volume: 1 error occurred:\n\t* volume name cannot be updated", http.StatusInternalServerError)
		return
	}
	if len(upd.Parameters) != 0 && !maps.Equal(n.vol.Parameters, upd.Parameters) {
		http.Error(w, "unable to update volume: volume parameters cannot be updated", http.StatusInternalServerError)
		return
	}
	if len(n.vol.Topologies) > 0 && !sameRequest(n.vol.RequestedTopologies, upd.RequestedTopologies) {
		http.Error(w, "unable to update volume: volume topology request update was not compatible with existing topology", http.StatusInternalServerError)
		return
	}
	n.vol.RequestedCapabilities, n.vol.MountOptions, n.vol.Secrets = upd.RequestedCapabilities, upd.MountOptions, upd.Secrets
	if !n.keepContext || len(upd.Context) != 0 {
		n.vol.Context = upd.Context
	}
	if upd.RequestedCapacityMin != 0 || upd.RequestedCapacityMax != 0 {
		n.vol.RequestedCapacityMin, n.vol.RequestedCapacityMax = upd.RequestedCapacityMin, upd.RequestedCapacityMax
	}
	w.Write([]byte(`{}`))
}

// sameRequest is Nomad's CSITopologyRequest.Equal: none equals only none; otherwise the
// required and preferred topologies pair up in order, by their segments.
func sameRequest(a, b *api.CSITopologyRequest) bool {
	if a == nil || b == nil {
		return a == b
	}
	same := func(x, y *api.CSITopology) bool {
		if x == nil || y == nil {
			return x == y
		}
		return maps.Equal(x.Segments, y.Segments)
	}
	return slices.EqualFunc(a.Required, b.Required, same) && slices.EqualFunc(a.Preferred, b.Preferred, same)
}

// changed names the fields of Nomad's copy that differ between before and after, by the
// names Changes uses.
func changed(before, after VolumeState) []string {
	var out []string
	if !slices.Equal(before.Capabilities, after.Capabilities) {
		out = append(out, "capabilities")
	}
	if before.FSType != after.FSType || before.MountFlags != after.MountFlags {
		out = append(out, "mount_options")
	}
	if !maps.Equal(before.Parameters, after.Parameters) {
		out = append(out, "parameters")
	}
	if !maps.Equal(before.Context, after.Context) {
		out = append(out, "context")
	}
	if before.CapacityMin != after.CapacityMin || before.CapacityMax != after.CapacityMax {
		out = append(out, "capacity")
	}
	if !slices.EqualFunc(before.Topologies, after.Topologies, func(a, b spec.Topology) bool { return maps.Equal(a.Segments, b.Segments) }) ||
		!reflect.DeepEqual(before.TopologyRequest, after.TopologyRequest) {
		out = append(out, "topology_request")
	}
	return out
}

// What `volctl nomad register --dry-run` (and `volctl nomad status`) say a registration
// would change in Nomad's copy of a volume is what it changes, on a Nomad before 1.9.6 and on
// a later one alike; what Nomad refuses to change is said as refused, and the registration
// is refused. Before: a volctl volume without a context, whose copy in Nomad has one (the
// plugin's, from `nomad volume create`, or written into its spec there), was said to change
// in "context", which a later Nomad keeps whatever volctl sends, so `nomad status` named it
// as differing after every registration; on an earlier Nomad the update cleared that context,
// which the plugin's node calls may need (democratic-csi #438). Parameters that differ, which
// Nomad refuses to update, were said to be an update, and a capacity volctl does not send,
// which Nomad keeps, a change.
func TestChangesAreWhatNomadsUpdateChanges(t *testing.T) {
	nomads := []struct {
		name string
		keep bool
	}{{"Nomad 1.9.5", false}, {"Nomad 1.9.6", true}}
	capability := []*api.CSIVolumeCapability{{AccessMode: "single-node-writer", AttachmentMode: "file-system"}}
	n1 := []*api.CSITopology{{Segments: map[string]string{"node": "n1"}}}
	for _, tc := range []struct {
		name    string
		have    api.CSIVolume
		want    spec.Volume
		refused []string
		refusal string   // what Nomad's refusal says (default: parameters')
		kept    []string // what Nomad keeps of its own however it differs: the handover's read-back says so
	}{
		{name: "Nomad's context, none here",
			have: api.CSIVolume{Context: map[string]string{"node_attach_driver": "nfs"}}},
		{name: "another context here",
			have: api.CSIVolume{Context: map[string]string{"node_attach_driver": "nfs"}},
			want: spec.Volume{Context: map[string]string{"node_attach_driver": "iscsi"}}},
		{name: "Nomad's parameters, none here",
			have: api.CSIVolume{Parameters: map[string]string{"type": "gp3"}}},
		{name: "other parameters here",
			have:    api.CSIVolume{Parameters: map[string]string{"type": "gp3"}},
			want:    spec.Volume{Parameters: map[string]string{"type": "io2"}},
			refused: []string{"parameters"}},
		{name: "Nomad's capacity, none here",
			have: api.CSIVolume{RequestedCapacityMin: 1 << 30}},
		{name: "another capacity here",
			have: api.CSIVolume{RequestedCapacityMin: 1 << 30},
			want: spec.Volume{CapacityMin: 2 << 30}},
		{name: "the same topology here",
			have: api.CSIVolume{Topologies: n1, RequestedTopologies: &api.CSITopologyRequest{Required: n1}},
			want: spec.Volume{TopologyRequest: &spec.TopologyRequest{Required: []spec.Topology{{Segments: map[string]string{"node": "n1"}}}}}},
		{name: "another topology here",
			have:    api.CSIVolume{Topologies: n1, RequestedTopologies: &api.CSITopologyRequest{Required: n1}},
			want:    spec.Volume{TopologyRequest: &spec.TopologyRequest{Required: []spec.Topology{{Segments: map[string]string{"node": "n2"}}}}},
			refused: []string{"topology_request"}, refusal: "not compatible with existing topology"},
		{name: "Nomad's topology, none here",
			have:    api.CSIVolume{Topologies: n1, RequestedTopologies: &api.CSITopologyRequest{Required: n1}},
			refused: []string{"topology_request"}, refusal: "not compatible with existing topology"},
		{name: "Nomad's topology, preferred too",
			have:    api.CSIVolume{Topologies: n1, RequestedTopologies: &api.CSITopologyRequest{Required: n1, Preferred: n1}},
			want:    spec.Volume{TopologyRequest: &spec.TopologyRequest{Required: []spec.Topology{{Segments: map[string]string{"node": "n1"}}}}},
			refused: []string{"topology_request"}, refusal: "not compatible with existing topology"},
		{name: "Nomad's name, none here",
			have: api.CSIVolume{Name: "nomads-name"}},
		{name: "another name here",
			have:    api.CSIVolume{Name: "nomads-name"},
			want:    spec.Volume{Name: "db"},
			refused: []string{"name"}, refusal: "volume name cannot be updated"},
		{name: "a topology here, none in Nomad",
			want: spec.Volume{TopologyRequest: &spec.TopologyRequest{Required: []spec.Topology{{Segments: map[string]string{"node": "n1"}}}}},
			kept: []string{"topology"}},
	} {
		for _, nv := range nomads {
			t.Run(tc.name+"/"+nv.name, func(t *testing.T) {
				n := &mergingNomad{keepContext: nv.keep, vol: tc.have}
				n.vol.ID, n.vol.Namespace, n.vol.PluginID, n.vol.ExternalID = "db", "default", "hp", "ext-db"
				n.vol.RequestedCapabilities, n.vol.MountOptions = capability, &api.CSIMountOptions{}
				srv := httptest.NewServer(n)
				defer srv.Close()
				c, err := NewClient(srv.URL)
				if err != nil {
					t.Fatal(err)
				}
				want := tc.want
				want.ID, want.Namespace, want.PluginID, want.ExternalID = "db", "default", "hp", "ext-db"
				want.Capabilities = []spec.Capability{{AccessMode: spec.SingleNodeWriter, AttachmentMode: spec.FileSystem}}
				before, err := c.Volume(context.Background(), "db", "default")
				if err != nil {
					t.Fatal(err)
				}
				said, refused := Changes(before, want), Refused(before, want)
				_, herr := c.HandOver(context.Background(), want, true, nil)
				after, err := c.Volume(context.Background(), "db", "default")
				if err != nil {
					t.Fatal(err)
				}
				if did := changed(before, after); !slices.Equal(said, did) {
					t.Errorf("Changes said the registration would change %q; it changed %q", said, did)
				}
				if len(want.Context) == 0 && !maps.Equal(after.Context, before.Context) {
					t.Errorf("a registration without a context left Nomad's copy with context %q; it had %q (the plugin's, which its node calls may need)", after.Context, before.Context)
				}
				if !slices.Equal(refused, tc.refused) {
					t.Errorf("Refused said %q; want %q", refused, tc.refused)
				}
				if kept := Kept(before, want); !slices.Equal(kept, tc.kept) {
					t.Errorf("Kept said %q; want %q", kept, tc.kept)
				}
				refusal := cmp.Or(tc.refusal, "cannot be updated")
				if len(tc.kept) > 0 {
					// Taken, and read back without what Nomad kept.
					if herr == nil || !strings.Contains(herr.Error(), "topologies none") || !strings.Contains(herr.Error(), "nomad volume deregister") {
						t.Errorf("registration: %v; want it to name the topology Nomad's copy lacks, and the deregistration that lets a registration give it one", herr)
					}
				} else if (herr != nil) != (len(tc.refused) > 0) || herr != nil && !strings.Contains(herr.Error(), refusal) {
					t.Errorf("registration: %v; want it refused only for %q", herr, tc.refused)
				}
			})
		}
	}
}

// A Nomad before 1.11.1 (1.10.7 and 1.8.19 Enterprise) redacts a CSI volume's secrets and
// mount flags in its state when it encodes the volume in place (GH-27176), but what a read
// (GET /v1/volume/csi/ID, `nomad volume status`, `volctl nomad status`) encodes is a copy
// (state.CSIVolumeByID returns vol.Copy(), whose secrets map and mount options are its own):
// only its event stream encodes the volume Nomad holds. volctl registered every volume with
// secrets a second time after its read-back, on the belief that the read-back had erased them:
// a second Raft write and a second ControllerValidateVolumeCapabilities at the plugin for
// nothing (and none against an event-stream subscriber, whose event of the second would
// redact them again). Now the registration is sent once, and Nomad, read back and read again
// as a status reads it, keeps the secrets and mount flags sent.
func TestHandOverSendsTheSecretsOnce(t *testing.T) {
	for _, tc := range []struct {
		name string
		n    *mergingNomad
	}{
		{"a new volume", &mergingNomad{none: true}},
		{"an update", &mergingNomad{vol: api.CSIVolume{ID: "db", Namespace: "default", PluginID: "hp", ExternalID: "ext-db",
			Secrets: api.CSISecrets{"token": "old"}, MountOptions: &api.CSIMountOptions{}}}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			srv := httptest.NewServer(tc.n)
			defer srv.Close()
			c, err := NewClient(srv.URL)
			if err != nil {
				t.Fatal(err)
			}
			v := spec.Volume{ID: "db", Namespace: "default", PluginID: "hp", ExternalID: "ext-db", Secrets: spec.Secrets{"token": "s3cret"},
				MountOptions: &spec.MountOptions{MountFlags: spec.MountFlags{"password=hunter2", "ro"}},
				Capabilities: []spec.Capability{{AccessMode: spec.SingleNodeWriter, AttachmentMode: spec.FileSystem}}}
			done, err := c.HandOver(context.Background(), v, true, nil)
			if err != nil || !done.OK {
				t.Fatalf("handover: %+v, %v", done, err)
			}
			for range 2 { // what volctl nomad status reads
				if _, err := c.Volume(context.Background(), "db", "default"); err != nil {
					t.Fatal(err)
				}
			}
			tc.n.mu.Lock()
			defer tc.n.mu.Unlock()
			if tc.n.puts != 1 {
				t.Errorf("the handover sent %d registrations, want 1", tc.n.puts)
			}
			if got := tc.n.vol.Secrets["token"]; got != "s3cret" {
				t.Errorf("after the handover and two reads, Nomad holds secret token = %q; want the one sent", got)
			}
			if got := tc.n.vol.MountOptions.MountFlags; !slices.Equal(got, []string{"password=hunter2", "ro"}) {
				t.Errorf("after the handover and two reads, Nomad holds mount flags %q; want the ones sent", got)
			}
			if done.Index != 7 {
				t.Errorf("handover index %d, want 7, the registration's", done.Index)
			}
		})
	}
}
