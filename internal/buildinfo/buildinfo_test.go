package buildinfo

import "testing"

// TestStringShowsTheStampedVersion: what the release build stamps with -ldflags -X is what
// `volctl version` prints.
func TestStringShowsTheStampedVersion(t *testing.T) {
	v, c, d := Version, Commit, Date
	t.Cleanup(func() { Version, Commit, Date = v, c, d })
	Version, Commit, Date = "1.2.3", "0123456789abcdef", "2026-11-22T00:00:00Z"
	if got, want := String(), "volctl 1.2.3 (0123456789ab, 2026-11-22T00:00:00Z)"; got != want {
		t.Fatalf("String() = %q, want %q", got, want)
	}
}
