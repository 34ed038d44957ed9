package nomad

import (
	"context"
	"net/http"
	"net/http/httptest"
	"testing"

	"github.com/volctl/volctl/internal/spec"
)

// registrationAnswered is the error of a registration Nomad answers with status and body.
func registrationAnswered(t *testing.T, status int, body string) error {
	t.Helper()
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		http.Error(w, body, status)
	}))
	defer srv.Close()
	c, err := NewClient(srv.URL)
	if err != nil {
		t.Fatal(err)
	}
	_, _, err = c.register(context.Background(), spec.Volume{ID: "db", PluginID: "hp", ExternalID: "vol-1",
		Capabilities: []spec.Capability{{AccessMode: spec.SingleNodeWriter, AttachmentMode: spec.FileSystem}}})
	if err == nil {
		t.Fatalf("registration answered %d: no error", status)
	}
	return err
}

// Nomad 2.0.5's 500s to the registration of a volume it had (CSIVolume.Register's
// reconcileVolume, the state store's UpsertCSIVolume), in the words it answers them with: a
// refusal of what this volume's copy has (refused again: keptCopy's deregistration is its way
// on), of another volume's identity (refused again, but someone else's: never advised
// deregistered), and a plugin's expand failing as Nomad grows the volume, which running again
// may get through (neither). Before, every "unable to update volume: " was the first.
func TestRefusalOfNomadsUpdateErrors(t *testing.T) {
	for _, tc := range []struct {
		body string
		want refusal
	}{
		{"rpc error: unable to update volume: volume name cannot be updated", copyRefused},
		{"unable to update volume: 1 error occurred:\n\t* volume parameters cannot be updated\n\n", copyRefused},
		{"unable to update volume: 2 errors occurred:\n\t* volume name cannot be updated\n\t* can not update mount options while volume is in use\n\n", copyRefused},
		{"unable to update volume: max requested capacity (10 MB) less than or equal to current (20 MB)", copyRefused},
		{"unable to update volume: expand is not implemented by this controller plugin", copyRefused},
		{"unable to update volume: 1 error occurred:\n\t* volume external ID cannot be updated\n\n", otherVolume},
		{"unable to update volume: 2 errors occurred:\n\t* volume name cannot be updated\n\t* volume plugin ID cannot be updated\n\n", otherVolume},
		{"rpc error: volume identity cannot be updated: db", otherVolume},
		// expandVolume's ControllerExpandVolume, the controller restarting or its client gone.
		{"unable to update volume: unable to expand volume: controller expand volume: CSI.ControllerExpandVolume: controller plugin returned an error: rpc error: code = Unavailable desc = the storage backend is restarting", updateFailed},
		{"unable to update volume: unable to expand volume: controller expand volume: CSI.ControllerExpandVolume could not find plugin: CSI client error (retryable): plugin hp for type csi-controller not found", updateFailed},
		// nodeExpandVolume's list of the node plugins' errors.
		{"unable to update volume: 1 error occurred:\n\t* Unknown node 5f1c\n\n", updateFailed},
		{"unable to update volume: 2 errors occurred:\n\t* volume name cannot be updated\n\t* rpc error: code = Unavailable desc = node plugin restarting\n\n", updateFailed},
		{"raft apply failed: leadership lost", notRefused},
		{"No cluster leader", notRefused},
	} {
		if got := refusalOf(registrationAnswered(t, http.StatusInternalServerError, tc.body)); got != tc.want {
			t.Errorf("Nomad's 500 %q: refusal %d, want %d", tc.body, got, tc.want)
		}
	}
	if got := refusalOf(registrationAnswered(t, http.StatusBadGateway, "unable to update volume: volume name cannot be updated")); got != notRefused {
		t.Errorf("a 502 (a proxy's): refusal %d, want none", got)
	}
}

// Nomad places a job on a volume by whether the capability its volume block asks is among the
// volume's, whatever their order: a copy with volctl's capabilities in another order (or one
// repeated) has nothing an update replaces.
func TestChangesComparesCapabilitiesAsASet(t *testing.T) {
	sw := spec.Capability{AccessMode: spec.SingleNodeWriter, AttachmentMode: spec.FileSystem}
	mw := spec.Capability{AccessMode: spec.MultiNodeMultiWriter, AttachmentMode: spec.FileSystem}
	want := spec.Volume{ID: "db", PluginID: "hp", ExternalID: "e", Capabilities: []spec.Capability{sw, mw}}
	for _, tc := range []struct {
		have    []spec.Capability
		changed bool
	}{
		{[]spec.Capability{mw, sw}, false},
		{[]spec.Capability{sw, mw, sw}, false},
		{[]spec.Capability{sw}, true},
		{[]spec.Capability{mw, sw, {AccessMode: spec.SingleNodeReaderOnly, AttachmentMode: spec.FileSystem}}, true},
	} {
		got := Changes(VolumeState{ID: "db", PluginID: "hp", ExternalID: "e", Capabilities: tc.have}, want)
		if changed := len(got) > 0; changed != tc.changed {
			t.Errorf("Nomad's capabilities %v, volctl's %v: Changes %v, want changed %v", tc.have, want.Capabilities, got, tc.changed)
		}
	}
}
