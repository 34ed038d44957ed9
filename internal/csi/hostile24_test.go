package csi_test

import (
	"context"
	"fmt"
	"strings"
	"testing"

	"github.com/volctl/volctl/internal/csi"
	"github.com/volctl/volctl/internal/csi/csitest"
)

// TestFingerprintBoundsTheManifest: a plugin whose GetPluginInfo answers a manifest far past
// the CSI spec's 4 KiB for a map (a million entries, a value of megabytes), up to gRPC's 4 MiB,
// had it taken at every connection, held with the fingerprint and printed whole by `plugin
// probe --json`. Past four times CSI's bound (16 KiB of keys and values) the fingerprint is
// refused, naming the plugin, the field, the size and what to do, as a name past its bound
// is; up to it the manifest is taken as it is.
func TestFingerprintBoundsTheManifest(t *testing.T) {
	many := func(n int) map[string]string {
		m := make(map[string]string, n)
		for i := range n {
			m[fmt.Sprintf("k%d", i)] = fmt.Sprintf("v%d", i)
		}
		return m
	}
	for _, tt := range []struct {
		name     string
		manifest map[string]string
		want     []string // in the error; none: no error
	}{
		{"at the bound", map[string]string{"url": strings.Repeat("u", 16<<10-3)}, nil},
		{"a value past it", map[string]string{"url": strings.Repeat("u", 16<<10)}, []string{"GetPluginInfo", `plugin "mem.csi.volctl.test"`, "manifest", "16387 bytes of keys and values in 1 entries", "4 KiB", "fix the plugin"}},
		{"a value of 3 MiB", map[string]string{"blob": strings.Repeat("b", 3<<20)}, []string{"manifest", "3145732 bytes"}},
		{"100,000 entries", many(100000), []string{"manifest", "in 100000 entries"}},
	} {
		t.Run(tt.name, func(t *testing.T) {
			cfg := csitest.DefaultMemConfig()
			cfg.Manifest = tt.manifest
			h := newHarness(t, cfg, withClientConfig(contentClient))
			fp, err := h.client.Fingerprint(context.Background())
			if tt.want == nil {
				if err != nil {
					t.Fatalf("Fingerprint = %v, want it taken", err)
				}
				if len(fp.Manifest) != len(tt.manifest) || fp.Manifest["url"] != tt.manifest["url"] {
					t.Errorf("fingerprint manifest of %d entries; want the plugin's", len(fp.Manifest))
				}
				return
			}
			if err == nil {
				t.Fatalf("Fingerprint took a manifest of %d entries (%d bytes)", len(fp.Manifest), csi.MapSize(fp.Manifest))
			}
			for _, w := range tt.want {
				if !strings.Contains(err.Error(), w) {
					t.Errorf("error %.300q does not say %s", err, w)
				}
			}
			if n := len(err.Error()); n > 1024 {
				t.Errorf("error is %d bytes long", n)
			}
		})
	}
}
