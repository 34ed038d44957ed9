package backoff

import (
	"reflect"
	"testing"
	"time"
)

func TestNextDoublesUpToMax(t *testing.T) {
	tests := []struct {
		name     string
		min, max time.Duration
		want     []time.Duration
	}{
		{"doubles up to the cap", time.Second, 5 * time.Second, []time.Duration{time.Second, 2 * time.Second, 4 * time.Second, 5 * time.Second, 5 * time.Second}},
		{"max below min is min", time.Second, time.Millisecond, []time.Duration{time.Second, time.Second}},
		{"no overflow", time.Duration(1) << 61, time.Duration(1<<63 - 1), []time.Duration{1 << 61, 1 << 62, 1<<63 - 1, 1<<63 - 1}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			b := New(tt.min, tt.max)
			var got []time.Duration
			for range tt.want {
				got = append(got, b.Next())
			}
			if !reflect.DeepEqual(got, tt.want) {
				t.Fatalf("waits = %v, want %v", got, tt.want)
			}
			b.Reset()
			if d := b.Next(); d != tt.want[0] {
				t.Fatalf("after Reset: %v, want %v", d, tt.want[0])
			}
		})
	}
}

func TestJitterStaysInHalfToWhole(t *testing.T) {
	for _, d := range []time.Duration{0, 1, time.Millisecond, 250 * time.Millisecond, time.Minute} {
		for range 1000 {
			if j := Jitter(d); j < d/2 || j > d {
				t.Fatalf("Jitter(%v) = %v, outside [%v, %v]", d, j, d/2, d)
			}
		}
	}
}
