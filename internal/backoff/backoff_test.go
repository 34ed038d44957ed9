package backoff

import (
	"testing"
	"time"
)

// TestNextDoesNotOverflow: doubling near the largest duration stops at max, never wraps to a
// negative wait. (agent's TestBackoff holds the doubling and Reset over the agent's ranges.)
func TestNextDoesNotOverflow(t *testing.T) {
	b := New(time.Duration(1)<<61, time.Duration(1<<63-1))
	want := []time.Duration{1 << 61, 1 << 62, 1<<63 - 1, 1<<63 - 1}
	for i, w := range want {
		if got := b.Next(); got != w {
			t.Fatalf("wait %d = %v, want %v", i, got, w)
		}
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
