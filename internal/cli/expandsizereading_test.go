package cli

import (
	"context"
	"os"
	"path/filepath"
	"testing"

	"github.com/volctl/volctl/internal/csi/csitest"
	"github.com/volctl/volctl/internal/engine"
)

// TestExpandSizeReadsAsTheSpecsCapacity (review31e): a spec says capacity_max = "2.01GB"; the same text
// given to `volume expand --size` must not be "above its capacity_max": one volctl reads one
// size string one way.
func TestExpandSizeReadsAsTheSpecsCapacity(t *testing.T) {
	ctx := context.Background()
	e := volumeVOfCapacity(t, "1GB", "2.01GB")
	if code, errOut := runOn(ctx, e, "volume", "expand", "v", "--size", "2.01GB"); code != ExitOK {
		t.Fatalf("volume expand --size 2.01GB of a volume whose spec says capacity_max = \"2.01GB\": exit %d: %s", code, errOut)
	}
}

// TestCreateAgainAtTheSizeExpandedToIsNoShrink: `volume expand --size 2.01GB` (help: "Sizes read
// like a spec's capacity_min") makes 2.01GB the volume's capacity_min; creating it again from
// a spec saying capacity_min = "2.01GB" is the same request and must not be a shrink.
func TestCreateAgainAtTheSizeExpandedToIsNoShrink(t *testing.T) {
	ctx := context.Background()
	_, e, _ := serveMem(t, csitest.NewMemPlugin(csitest.DefaultMemConfig()))
	dir := t.TempDir()
	spec := func(min string) string {
		file := filepath.Join(dir, min+".hcl")
		src := `id = "v"
name = "v"
type = "csi"
plugin_id = "mem"
capacity_min = "` + min + `"
capability {
  access_mode     = "single-node-writer"
  attachment_mode = "file-system"
}
`
		if err := os.WriteFile(file, []byte(src), 0o600); err != nil {
			t.Fatal(err)
		}
		return file
	}
	if code, errOut := runOn(ctx, e, "volume", "create", spec("1GB")); code != ExitOK {
		t.Fatalf("volume create: exit %d: %s", code, errOut)
	}
	if code, errOut := runOn(ctx, e, "volume", "expand", "v", "--size", "2.01GB"); code != ExitOK {
		t.Fatalf("volume expand: exit %d: %s", code, errOut)
	}
	if code, errOut := runOn(ctx, e, "volume", "create", spec("2.01GB")); code != ExitOK {
		t.Fatalf("volume create again with capacity_min = \"2.01GB\" after `volume expand --size 2.01GB`: exit %d: %s", code, errOut)
	}
}

// volumeVOfCapacity is an engine on the mem plugin holding volume "v", created from a spec of
// capacity_min minSize and capacity_max maxSize.
func volumeVOfCapacity(t *testing.T, minSize, maxSize string) *engine.Engine {
	t.Helper()
	_, e, _ := serveMem(t, csitest.NewMemPlugin(csitest.DefaultMemConfig()))
	file := filepath.Join(t.TempDir(), "v.hcl")
	src := `id = "v"
name = "v"
type = "csi"
plugin_id = "mem"
capacity_min = "` + minSize + `"
capacity_max = "` + maxSize + `"
capability {
  access_mode     = "single-node-writer"
  attachment_mode = "file-system"
}
`
	if err := os.WriteFile(file, []byte(src), 0o600); err != nil {
		t.Fatal(err)
	}
	if code, errOut := runOn(context.Background(), e, "volume", "create", file); code != ExitOK {
		t.Fatalf("volume create: exit %d: %s", code, errOut)
	}
	return e
}
