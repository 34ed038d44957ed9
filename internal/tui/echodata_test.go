package tui

import (
	"context"
	"strings"
	"testing"

	csipb "github.com/container-storage-interface/spec/lib/go/csi"
	"google.golang.org/grpc"

	"github.com/volctl/volctl/internal/csi/csitest"
	"github.com/volctl/volctl/internal/spec"
)

// A plugin that echoes a volume's secret in the data it returns (the volume_context and ID of
// CreateVolume, its version and node ID) does not get it shown: not in the tables, not in the
// volume and plugin details.
func TestPluginDataEchoingSecretsNotShown(t *testing.T) {
	const secret = "tuiecho-s3cret-4d1e"
	ctx := context.Background()
	cfg := csitest.DefaultMemConfig()
	cfg.NodeID = "node-" + secret
	cfg.Version = "1.0-" + secret
	echo := func(ctx context.Context, req any, _ *grpc.UnaryServerInfo, handler grpc.UnaryHandler) (any, error) {
		resp, err := handler(ctx, req)
		if r, ok := resp.(*csipb.CreateVolumeResponse); ok && err == nil {
			for _, v := range req.(*csipb.CreateVolumeRequest).GetSecrets() {
				r.Volume.VolumeContext = map[string]string{"echo": v}
			}
		}
		return resp, err
	}
	e := mountingEngine(t, cfg, csitest.WithInterceptor(echo))
	if _, err := e.CreateVolume(ctx, spec.Volume{ID: "db", Name: "db", Type: "csi", PluginID: "mem",
		Capabilities: []spec.Capability{{AccessMode: spec.SingleNodeWriter, AttachmentMode: spec.FileSystem}},
		Secrets:      spec.Secrets{"token": secret}}); err != nil {
		t.Fatal(err)
	}
	if v, _ := e.Volume(ctx, "db"); v.Context["echo"] != secret {
		t.Fatalf("the plugin did not echo the secret into the context (%v): the test tests nothing", v.Context)
	}
	h := newHarness(t, e, Options{})
	var views []string
	h.keys("enter")
	views = append(views, h.m.View())
	h.keys("G")
	views = append(views, h.m.View())
	h.keys("esc", "3")
	views = append(views, h.m.View())
	h.keys("enter")
	views = append(views, h.m.View())
	h.keys("G")
	views = append(views, h.m.View())
	if !strings.Contains(strings.Join(views, "\n"), "[REDACTED]") {
		t.Errorf("no view shows the echoed values redacted: the views did not reach them\n%s", strings.Join(views, "\n"))
	}
	for _, v := range views {
		if strings.Contains(v, secret) {
			t.Errorf("the dashboard shows the secret a plugin echoed in its data:\n%s", v)
		}
	}
}
