package csi_test

import (
	"context"
	"fmt"
	"strings"
	"testing"

	"github.com/volctl/volctl/internal/csi/csitest"
	"github.com/volctl/volctl/internal/spec"
)

// TestFingerprintBoundsTheNodesTopology: a plugin whose NodeGetInfo answers an
// accessible_topology far past the CSI spec's bounds (a segment's key and value are strings,
// 128 bytes; the segments a map, 4 KiB), up to gRPC's 4 MiB, had it taken as the node's
// topology: recorded with the fingerprint, printed whole by `plugin show`, `plugin probe` and
// the dashboard, and matched against every volume's topology at each claim. Past four times
// those bounds (512 bytes a key or value, 16 KiB in all) the fingerprint is refused, naming
// the plugin, the size and what to do, as a node ID past its bound is; up to them it is taken
// as it is.
func TestFingerprintBoundsTheNodesTopology(t *testing.T) {
	many := func(n int) map[string]string {
		m := make(map[string]string, n)
		for i := range n {
			m[fmt.Sprintf("topology.example.com/k%d", i)] = fmt.Sprintf("zone-%d", i)
		}
		return m
	}
	for _, tt := range []struct {
		name     string
		segments map[string]string
		want     []string // in the error; none: no error
	}{
		{"key and value at the bound", map[string]string{strings.Repeat("k", 512): strings.Repeat("v", 512)}, nil},
		{"a value past it", map[string]string{"zone": strings.Repeat("v", 513)}, []string{"NodeGetInfo", `plugin "mem.csi.volctl.test"`, `segment "zone"`, "value of 513 bytes", "128 bytes", "fix the plugin"}},
		{"a value of 1 MiB", map[string]string{"zone": strings.Repeat("v", 1<<20)}, []string{"value of 1048576 bytes"}},
		{"a key past it", map[string]string{strings.Repeat("k", 513): "a"}, []string{"NodeGetInfo", "key of 513 bytes", "fix the plugin"}},
		{"segments in all past 16 KiB", many(1000), []string{"NodeGetInfo", "1000 segments", "bytes of keys and values", "4 KiB", "fix the plugin"}},
		{"50,000 segments", many(50000), []string{"50000 segments"}},
	} {
		t.Run(tt.name, func(t *testing.T) {
			cfg := csitest.DefaultMemConfig()
			cfg.Topology = &spec.Topology{Segments: tt.segments}
			h := newHarness(t, cfg, withClientConfig(contentClient))
			fp, err := h.client.Fingerprint(context.Background())
			if tt.want == nil {
				if err != nil {
					t.Fatalf("Fingerprint = %v, want it taken", err)
				}
				if fp.AccessibleTopology == nil || len(fp.AccessibleTopology.Segments) != len(tt.segments) {
					t.Errorf("fingerprint topology = %v; want the plugin's", fp.AccessibleTopology)
				}
				return
			}
			if err == nil {
				t.Fatalf("Fingerprint took a node topology of %d segments, %d bytes", len(tt.segments), segmentsSize(tt.segments))
			}
			for _, w := range tt.want {
				if !strings.Contains(err.Error(), w) {
					t.Errorf("error %q does not say %s", err, w)
				}
			}
			if len(err.Error()) > 1024 {
				t.Errorf("the error is %d bytes long", len(err.Error()))
			}
		})
	}
}

func segmentsSize(m map[string]string) int {
	n := 0
	for k, v := range m {
		n += len(k) + len(v)
	}
	return n
}
