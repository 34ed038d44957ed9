package store

import (
	"context"
	"testing"

	"github.com/volctl/volctl/internal/spec"
)

// BenchmarkNearCheck10k is a create's (or delete's) look for its external ID spelled otherwise
// (engine's nearStorage: NearExternalIDs narrowed in SQL, then spec.SameStorageID) among 10,000
// volumes, for an ASCII ID and a non-ASCII one (no LIKE pattern: every ID read), beside a Get.
func BenchmarkNearCheck10k(b *testing.B) {
	s := newStore(b)
	insertVolumes(b, s, "v", 10000)
	for _, asked := range []string{"ext-new", "ext-n\u00e9w"} {
		b.Run(asked, func(b *testing.B) {
			defer cpuPerOp(b)()
			for b.Loop() {
				_ = s.View(context.Background(), func(tx *Tx) error {
					all, err := tx.Volumes().NearExternalIDs(asked)
					if err != nil {
						b.Fatal(err)
					}
					for _, o := range all {
						_ = spec.SameStorageID(o.ExternalID, asked)
					}
					return err
				})
			}
		})
	}
	b.Run("get", func(b *testing.B) {
		defer cpuPerOp(b)()
		for b.Loop() {
			_ = s.View(context.Background(), func(tx *Tx) error { _, err := tx.Volumes().Get("v-05000"); return err })
		}
	})
}
