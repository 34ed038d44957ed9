package agent

import (
	"reflect"
	"testing"
	"time"

	"github.com/volctl/volctl/internal/backoff"
)

func TestBackoff(t *testing.T) {
	tests := []struct {
		name     string
		min, max time.Duration
		want     []time.Duration
	}{
		{"doubles up to the cap", time.Second, 5 * time.Second, []time.Duration{time.Second, 2 * time.Second, 4 * time.Second, 5 * time.Second, 5 * time.Second}},
		{"max below min is min", time.Second, time.Millisecond, []time.Duration{time.Second, time.Second}},
		{"default range", DefaultBackoffMin, DefaultBackoffMax, []time.Duration{1, 2, 4, 8, 16, 32, 60, 60}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			b := backoff.New(tt.min, tt.max)
			var got []time.Duration
			for range tt.want {
				got = append(got, b.Next())
			}
			want := tt.want
			if tt.name == "default range" {
				want = make([]time.Duration, len(tt.want))
				for i, s := range tt.want {
					want[i] = s * time.Second
				}
			}
			if !reflect.DeepEqual(got, want) {
				t.Fatalf("waits = %v, want %v", got, want)
			}
			b.Reset()
			if d := b.Next(); d != want[0] {
				t.Fatalf("after reset: %v, want %v", d, want[0])
			}
		})
	}
}
