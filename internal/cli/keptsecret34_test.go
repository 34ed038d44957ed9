package cli

import (
	"context"
	"strings"
	"testing"

	csipb "github.com/container-storage-interface/spec/lib/go/csi"
	"google.golang.org/grpc"

	"github.com/volctl/volctl/internal/csi/csitest"
	"github.com/volctl/volctl/internal/iostreams"
)

// The adversary: a plugin that echoes volume a's secret into the volume context it returns for
// volume b. The context is kept raw (it goes back to the plugin in every stage and publish),
// and volume status scrubbed it with the secrets the state held: once a was deleted, a's
// secret was no longer one of them, and volume status b printed it whole. Now it is still
// masked, and b's context is kept as the plugin gave it.
func TestAnotherVolumesSecretInPluginDataStaysMaskedAfterItsDelete(t *testing.T) {
	const aSecret, bSecret = "vol-a-token-7c1e", "vol-b-token-93fa"
	ctx := context.Background()
	mem := csitest.NewMountingMemPlugin(t, echoingMemConfig("x"))
	echoCtx := func(ctx context.Context, req any, info *grpc.UnaryServerInfo, handler grpc.UnaryHandler) (any, error) {
		resp, err := handler(ctx, req)
		if r, ok := resp.(*csipb.CreateVolumeResponse); ok && err == nil && req.(*csipb.CreateVolumeRequest).GetSecrets()["token"] == bSecret {
			r.Volume.VolumeContext = map[string]string{"share": "//srv/" + aSecret}
		}
		return resp, err
	}
	_, e, eng := serveMem(t, mem, csitest.WithInterceptor(echoCtx))
	createWithSecret(t, e, "a", aSecret)
	createWithSecret(t, e, "b", bSecret)
	if err := e.DeleteVolume(ctx, "a"); err != nil {
		t.Fatal(err)
	}
	ios, _, out, errOut := iostreams.Test()
	if err := volumeStatusRun(ctx, &VolumeStatusOptions{IO: ios, Engine: eng, Now: nowFunc, ID: "b"}); err != nil {
		t.Fatal(err)
	}
	if text := out.String() + errOut.String(); strings.Contains(text, aSecret) || !strings.Contains(text, "//srv/[REDACTED]") {
		t.Errorf("volume status b after a's delete shows a's secret, which the plugin echoed into b's context, or not the context masked:\n%s", text)
	}
	if v, err := e.Volume(ctx, "b"); err != nil || v.Context["share"] != "//srv/"+aSecret {
		t.Errorf("b's context = %q (%v); want it kept as the plugin gave it, to be sent back", v.Context, err)
	}
}
