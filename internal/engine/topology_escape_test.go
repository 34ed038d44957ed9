package engine

import (
	"errors"
	"strings"
	"testing"

	"github.com/volctl/volctl/internal/csi/csitest"
	"github.com/volctl/volctl/internal/spec"
)

// Topology segments come from the plugin (NodeGetInfo for the node, CreateVolume for the
// volume): a refusal that words them must escape their control characters, so an escape
// sequence in one (a window title, a screen clear) does not reach the terminal that shows it.
func TestTopologyRefusalEscapesControlCharacters(t *testing.T) {
	t.Parallel()
	h := newHarness(t, func(c *csitest.MemConfig) {
		c.Topology = &spec.Topology{Segments: map[string]string{"zone": "b\x1b]0;pwned\x07"}}
		c.CreateTopology = &spec.Topology{Segments: map[string]string{"zone\x1b[31m": "a\x1b[2J"}}
	})
	h.create(volume("v"))
	_, err := h.e.Claim(h.ctx, ClaimRequest{VolumeID: "v", Alloc: "a"})
	if !errors.Is(err, ErrConflict) {
		t.Fatalf("claim outside the volume's topology = %v, want a conflict", err)
	}
	if strings.ContainsAny(err.Error(), "\x1b\x07") {
		t.Errorf("the refusal carries the plugin's control characters raw: %q", err)
	}
	// Quoted where escaped (segmentWord), so an escape and the same text typed read apart.
	for _, want := range []string{`{"zone\x1b[31m"="a\x1b[2J"}`, `{zone="b\x1b]0;pwned\a"}`} {
		if !strings.Contains(err.Error(), want) {
			t.Errorf("refusal %q\nwant the segments escaped, %s", err, want)
		}
	}
}
