package engine

import (
	"errors"
	"slices"
	"strings"
	"testing"

	"google.golang.org/grpc/codes"

	"github.com/volctl/volctl/internal/csi"
	"github.com/volctl/volctl/internal/spec"
	"github.com/volctl/volctl/internal/store"
)

// volumeRow is the volume's row as stored.
func (h *harness) volumeRow(id string) store.Volume {
	h.t.Helper()
	var v store.Volume
	h.update(func(tx *store.Tx) error {
		var err error
		v, err = tx.Volumes().Get(id)
		return err
	})
	return v
}

// TestCreateAgainWithOtherCapabilitiesMountOptionsOrSecretsIsAConflict: `volume create --help`
// promises that creating an existing volume "with the same spec changes nothing and says
// unchanged". A spec that changes the volume's capabilities, mount options or secrets is not
// the same spec, and a create does not apply them: it answered as unchanged ("it exists with
// this spec", exit 0), and claims went on getting the stored capabilities, mount flags and
// secrets, a rotated credential included. It is a conflict naming the fields (never the
// secrets' or flags' values), the volume left as stored; the way it names, registering the
// spec again with the external ID, applies them.
func TestCreateAgainWithOtherCapabilitiesMountOptionsOrSecretsIsAConflict(t *testing.T) {
	t.Parallel()
	h := newHarness(t, nil)
	sv := volume("db", capab(spec.SingleNodeWriter), capab(spec.SingleNodeReaderOnly))
	sv.MountOptions = &spec.MountOptions{FSType: "ext4", MountFlags: spec.MountFlags{"noatime"}}
	created := h.create(sv)
	if again, err := h.e.CreateVolume(h.ctx, sv); err != nil || again.ExternalID != created.ExternalID {
		t.Fatalf("create again with the same spec = %+v, %v; want the volume, unchanged", again, err)
	}
	for _, tc := range []struct {
		field  string
		change func(*spec.Volume)
	}{
		{"capabilities", func(v *spec.Volume) { v.Capabilities = v.Capabilities[1:] }},
		{"mount_options", func(v *spec.Volume) {
			v.MountOptions = &spec.MountOptions{FSType: "ext4", MountFlags: spec.MountFlags{"noexec"}}
		}},
		{"secrets", func(v *spec.Volume) { v.Secrets = spec.Secrets{"token": "rotated-secret"} }},
	} {
		changed := sv
		tc.change(&changed)
		_, err := h.e.CreateVolume(h.ctx, changed)
		if !errors.Is(err, ErrConflict) || !strings.Contains(err.Error(), `volume "db" exists, and creating it again does not change its `+tc.field) {
			t.Fatalf("create again with other %s = %v; want a conflict naming %s", tc.field, err, tc.field)
		}
		for _, secret := range []string{"rotated-secret", "s3cr3t", "noexec", "noatime"} {
			if strings.Contains(err.Error(), secret) {
				t.Errorf("conflict %q shows %q", err, secret)
			}
		}
	}
	v := h.volumeRow("db")
	if len(v.Capabilities) != 2 || v.Secrets["token"] != "s3cr3t" || !slices.Equal(v.MountOptions.MountFlags, spec.MountFlags{"noatime"}) {
		t.Fatalf("volume after the refused creates = %+v; want it as stored", v)
	}

	// The way out the error names works: the spec registered again, with the external ID.
	reg := sv
	reg.ExternalID = created.ExternalID
	reg.Secrets = spec.Secrets{"token": "rotated-secret"}
	if _, err := h.e.RegisterVolume(h.ctx, reg); err != nil {
		t.Fatalf("register again, as the conflict says: %v", err)
	}
	if v := h.volumeRow("db"); v.Secrets["token"] != "rotated-secret" {
		t.Fatalf("secrets after registering again = %v; want the rotated one", v.Secrets.Plain())
	}
}

// The same changes to the spec of a create that was interrupted (CreateVolume answered
// UNAVAILABLE past its retries: the volume left creating): creating it again replays the
// request first recorded, under the same CSI name, and silently left the spec's other
// capabilities, mount options or secrets out while it said the volume was created. It is a
// conflict naming the fields, and nothing is sent; the first spec still finishes it.
func TestCreateReplayedWithOtherCapabilitiesMountOptionsOrSecretsIsAConflict(t *testing.T) {
	t.Parallel()
	h := newHarness(t, nil)
	sv := volume("db", capab(spec.SingleNodeWriter), capab(spec.SingleNodeReaderOnly))
	h.faults.FailNext(csi.RPCCreateVolume, codes.Unavailable, fastRetry.Attempts)
	if _, err := h.e.CreateVolume(h.ctx, sv); err == nil {
		t.Fatal("create succeeded through CreateVolume failing UNAVAILABLE")
	}
	sent := h.faults.Calls(csi.RPCCreateVolume)
	for _, tc := range []struct {
		field  string
		change func(*spec.Volume)
	}{
		{"capabilities", func(v *spec.Volume) { v.Capabilities = v.Capabilities[1:] }},
		{"mount_options", func(v *spec.Volume) { v.MountOptions = &spec.MountOptions{MountFlags: spec.MountFlags{"noexec"}} }},
		{"secrets", func(v *spec.Volume) { v.Secrets = spec.Secrets{"token": "rotated-secret"} }},
	} {
		changed := sv
		tc.change(&changed)
		_, err := h.e.CreateVolume(h.ctx, changed)
		if !errors.Is(err, ErrConflict) || !strings.Contains(err.Error(), "create was interrupted") || !strings.Contains(err.Error(), tc.field) {
			t.Errorf("create replayed with other %s = %v; want a conflict naming %s and the interrupted create", tc.field, err, tc.field)
		}
		if err != nil && (strings.Contains(err.Error(), "rotated-secret") || strings.Contains(err.Error(), "noexec")) {
			t.Errorf("conflict %q shows a value", err)
		}
	}
	if n := h.faults.Calls(csi.RPCCreateVolume); n != sent {
		t.Errorf("CreateVolume sent %d more times by the refused creates", n-sent)
	}
	if v, err := h.e.CreateVolume(h.ctx, sv); err != nil || v.State != string(store.VolumeReady) {
		t.Errorf("create with the first spec = %+v, %v; want it finished, ready", v, err)
	}
}
