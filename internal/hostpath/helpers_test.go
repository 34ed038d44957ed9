package hostpath_test

import (
	"context"
	"strings"
	"testing"

	"github.com/container-storage-interface/spec/lib/go/csi"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"

	"github.com/volctl/volctl/internal/hostpath"
	"github.com/volctl/volctl/internal/hostpath/hostpathtest"
)

const mib = 1 << 20

// client is a started plugin and the three CSI clients on one connection.
type client struct {
	srv *hostpathtest.Server
	id  csi.IdentityClient
	ctl csi.ControllerClient
	nd  csi.NodeClient
}

func start(t *testing.T, cfg hostpath.Config) *client {
	t.Helper()
	srv := hostpathtest.Start(t, cfg)
	conn := srv.Dial(t)
	return &client{srv: srv, id: csi.NewIdentityClient(conn), ctl: csi.NewControllerClient(conn), nd: csi.NewNodeClient(conn)}
}

// startFake starts a plugin whose mounts are only bookkept, so node RPCs run without root.
func startFake(t *testing.T, cfg hostpath.Config) (*client, *hostpathtest.FakeMounter) {
	t.Helper()
	m := &hostpathtest.FakeMounter{}
	cfg.Mounter = m
	return start(t, cfg), m
}

func mountCap(mode csi.VolumeCapability_AccessMode_Mode, flags ...string) *csi.VolumeCapability {
	return &csi.VolumeCapability{
		AccessMode: &csi.VolumeCapability_AccessMode{Mode: mode},
		AccessType: &csi.VolumeCapability_Mount{Mount: &csi.VolumeCapability_MountVolume{MountFlags: flags}},
	}
}

var snw = mountCap(csi.VolumeCapability_AccessMode_SINGLE_NODE_WRITER)

func createReq(name string, size int64) *csi.CreateVolumeRequest {
	return &csi.CreateVolumeRequest{
		Name:               name,
		VolumeCapabilities: []*csi.VolumeCapability{snw},
		CapacityRange:      &csi.CapacityRange{RequiredBytes: size},
	}
}

func (c *client) createVolume(t *testing.T, name string) *csi.Volume {
	t.Helper()
	resp, err := c.ctl.CreateVolume(context.Background(), createReq(name, mib))
	if err != nil {
		t.Fatalf("CreateVolume %q: %v", name, err)
	}
	return resp.GetVolume()
}

// volumeDir is where the plugin keeps a volume's data.
func (c *client) volumeDir(t *testing.T, id string) string {
	t.Helper()
	dir, ok := c.srv.Plugin.VolumePath(id)
	if !ok {
		t.Fatalf("volume %q has no directory", id)
	}
	return dir
}

// wantCode fails unless err is a gRPC status with code and a message containing every
// fragment.
func wantCode(t *testing.T, err error, code codes.Code, fragments ...string) {
	t.Helper()
	if err == nil {
		t.Fatalf("got success, want %v", code)
	}
	st := status.Convert(err)
	if st.Code() != code {
		t.Fatalf("got %v (%s), want %v", st.Code(), st.Message(), code)
	}
	for _, f := range fragments {
		if !strings.Contains(st.Message(), f) {
			t.Errorf("message %q does not mention %q", st.Message(), f)
		}
	}
}

func mustOK(t *testing.T, err error) {
	t.Helper()
	if err != nil {
		t.Fatal(err)
	}
}
