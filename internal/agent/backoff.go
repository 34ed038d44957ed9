package agent

import "time"

// backoff is the capped exponential wait between restarts of a plugin that keeps failing:
// min, 2*min, 4*min, ... up to max. It is reset once a plugin has stayed healthy for max, so a
// plugin that crashes once a day restarts quickly, and one that crash-loops waits ever longer.
type backoff struct {
	min, max time.Duration
	next     time.Duration
}

func newBackoff(min, max time.Duration) *backoff {
	if max < min {
		max = min
	}
	return &backoff{min: min, max: max, next: min}
}

// wait returns the wait before the next restart and doubles the one after it.
func (b *backoff) wait() time.Duration {
	d := b.next
	if b.next < b.max {
		b.next = min(2*b.next, b.max)
	}
	return d
}

// reset starts over from min.
func (b *backoff) reset() { b.next = b.min }
