package csi

import (
	"strings"
	"testing"
)

// BenchmarkScrubEveryReading scrubs 1 MiB of a plugin's message that holds something for
// every reading terminals differ on (a C1 CSI, SD, an ambiguous character, a VS16 emoji) and
// moves back: the shown view is drawn in each of the 10 combinations of them findShown draws, for
// each way of reading control bytes' escapes it needs; BenchmarkScrubMovingUpEachCharacter is
// the one-reading case.
func BenchmarkScrubEveryReading(b *testing.B) {
	msg := strings.Repeat("\x1b[Ax\u00b1\u2764\ufe0f\b\u009bT", 1<<20/15)
	scrub := Scrubber([]string{"hunter2-s3cret"})
	b.SetBytes(int64(len(msg)))
	for b.Loop() {
		scrub(msg)
	}
}
