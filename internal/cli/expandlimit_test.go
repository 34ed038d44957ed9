package cli

import (
	"context"
	"sync"
	"testing"

	csipb "github.com/container-storage-interface/spec/lib/go/csi"
	"google.golang.org/grpc/codes"
	"google.golang.org/protobuf/proto"

	"github.com/volctl/volctl/internal/csi"
	"github.com/volctl/volctl/internal/csi/csitest"
	"github.com/volctl/volctl/internal/shellquote/shellquotetest"
)

// review31c found: an expand given --limit whose ControllerExpandVolume answer is lost says to "run
// the same `volctl volume expand v --size 2GiB` again": not the same, it drops --limit, and run
// as advised the plugin is sent no limit_bytes, free to grow the volume past the limit the user
// set (a plugin rounding up to its allocation unit does).
func TestExpandAdviceKeepsTheLimit(t *testing.T) {
	requireMount(t)
	ctx := context.Background()
	faults := csitest.NewFaults()
	_, e, _ := serveMem(t, csitest.NewMountingMemPlugin(t, csitest.DefaultMemConfig()), csitest.WithFaults(faults))
	createSingleWriter(t, e, "v")
	faults.FailAlways(csi.RPCControllerExpandVolume, codes.Unavailable)
	code, errOut := runOn(ctx, e, "volume", "expand", "v", "--size", "2GiB", "--limit", "2GiB")
	faults.Clear()
	if code != ExitError {
		t.Fatalf("expand with its answers lost: exit %d: %s", code, errOut)
	}
	again := lastAdvised(errOut, "volctl volume expand")
	var (
		mu     sync.Mutex
		limits []int64
	)
	faults.Inject(csi.RPCControllerExpandVolume, csitest.Fault{When: func(req proto.Message) bool {
		mu.Lock()
		defer mu.Unlock()
		limits = append(limits, req.(*csipb.ControllerExpandVolumeRequest).GetCapacityRange().GetLimitBytes())
		return false
	}})
	if code, out := runOn(ctx, e, shellquotetest.RunArgs(t, again)...); code != ExitOK {
		t.Fatalf("the advised `%s`: exit %d: %s", again, code, out)
	}
	mu.Lock()
	defer mu.Unlock()
	for _, l := range limits {
		if l != 2<<30 {
			t.Errorf("the advised `%s` (\"the same\" expand) sent ControllerExpandVolume limit_bytes %d, not the 2GiB limit the expand was given:\n%s", again, l, errOut)
		}
	}
}

// TestExpandAdvicePastTheLimitIsTaken: an expand whose ControllerExpandVolume answered above its
// --limit, the storage past the capacity_max it recorded, and whose NodeExpandVolume failed says
// to expand the volume to the size it has, which pays the node expansion; the command line
// refused that, before the engine saw it, as a size above capacity_max (exit 2, "pass --limit").
func TestExpandAdvicePastTheLimitIsTaken(t *testing.T) {
	e := advisedAfterNodeExpandFails(t, 3<<30, "--size", "2GiB", "--limit", "2GiB")
	if code, out := runOn(context.Background(), e, "volume", "expand", "v", "--size", "4GiB"); code != ExitUsage {
		t.Errorf("expand past both the capacity_max and the size the volume has, without --limit: exit %d, want %d: %s", code, ExitUsage, out)
	}
}
