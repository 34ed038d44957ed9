package engine

import (
	"context"
	"fmt"
	"testing"

	"github.com/volctl/volctl/internal/spec"
	"github.com/volctl/volctl/internal/store"
)

// BenchmarkDashboard10k is the dashboard's read of a state of 10,000 volumes, each claimed,
// some holding secrets: Engine.Dashboard alone (its one read transaction, and the scrub of
// what it read with the secrets that read found), and with the dashboard's own scrub after it
// (tui's redacted of the whole read), which each refresh ran before the engine scrubbed its read: a refresh is
// "read" now, "read+scrub" before.
func BenchmarkDashboard10k(b *testing.B) {
	ctx := context.Background()
	e := engineOf10k(b, nil, func(tx *store.Tx, i int) error {
		v := store.Volume{ID: fmt.Sprintf("vol-%05d", i), Name: fmt.Sprintf("volume %d", i), PluginID: "hp", State: store.VolumeReady}
		if i%100 == 0 {
			v.Secrets = spec.Secrets{"token": fmt.Sprintf("s3cret-token-%05d", i)}
		}
		if err := tx.Volumes().Insert(&v); err != nil {
			return err
		}
		c := store.Claim{VolumeID: v.ID, Alloc: fmt.Sprintf("web-%05d", i), Mode: store.ClaimWrite, State: store.ClaimPublished,
			AccessMode: spec.SingleNodeWriter, AttachmentMode: spec.FileSystem, TargetPath: "/var/lib/volctl/publish/web/" + v.ID}
		return tx.Claims().Insert(&c)
	})
	for _, scrubAfter := range []bool{false, true} {
		b.Run(map[bool]string{false: "read", true: "read+scrub"}[scrubAfter], func(b *testing.B) {
			start := processCPU(b)
			for b.Loop() {
				d, err := e.Dashboard(ctx, 100)
				if err == nil && scrubAfter {
					err = e.RedactValue(ctx, &d)
				}
				if err != nil || len(d.Volumes) != 10_000 || len(d.Claims) != 10_000 {
					b.Fatalf("%d volumes, %d claims, %v", len(d.Volumes), len(d.Claims), err)
				}
			}
			b.ReportMetric(float64(processCPU(b)-start)/float64(b.N), "cpu-ns/op")
		})
	}
}
