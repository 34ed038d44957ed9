// Package backoff is volctl's one backoff: capped exponential waits, jittered where many
// processes may fail together. The engine spaces RPC retries with it, the store its retries of
// SQLITE_BUSY, the agent plugin restarts and re-drive passes.
package backoff

import (
	"math/rand/v2"
	"time"
)

// Backoff is capped exponential backoff: min, 2*min, 4*min, ... up to max. It is not safe for
// concurrent use.
type Backoff struct {
	min, max, next time.Duration
}

// New returns a Backoff from min to max; a max below min is min.
func New(min, max time.Duration) *Backoff {
	if max < min {
		max = min
	}
	return &Backoff{min: min, max: max, next: min}
}

// Next returns the next wait and doubles the one after it, up to max.
func (b *Backoff) Next() time.Duration {
	d := b.next
	if b.next < b.max {
		b.next = min(2*b.next, b.max)
		if b.next <= 0 { // overflow
			b.next = b.max
		}
	}
	return d
}

// Reset starts over from min.
func (b *Backoff) Reset() { b.next = b.min }

// Jitter returns a wait drawn from [d/2, d], so that processes that failed together do not try
// again together.
func Jitter(d time.Duration) time.Duration {
	return d/2 + time.Duration(rand.Int64N(int64(d/2)+1))
}
