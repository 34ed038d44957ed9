package display

import (
	"testing"
	"time"

	"github.com/volctl/volctl/internal/spec"
)

func TestAgeAndAgo(t *testing.T) {
	now := time.Date(2026, 3, 14, 12, 0, 0, 0, time.UTC)
	for _, tt := range []struct {
		ago       time.Duration
		age, sent string
	}{
		{300 * time.Millisecond, "0s", "just now"},
		{45 * time.Second, "45s", "45s ago"},
		{117 * time.Second, "1m", "1m ago"}, // one unit per range: never "117s" beside "2m"
		{2 * time.Minute, "2m", "2m ago"},
		{3 * time.Hour, "3h", "3h ago"},
		{50 * time.Hour, "2d", "2d ago"},
		{-time.Minute, "0s", "just now"},
	} {
		if got := Age(now, now.Add(-tt.ago)); got != tt.age {
			t.Errorf("Age(%s) = %q, want %q", tt.ago, got, tt.age)
		}
		if got := Ago(now, now.Add(-tt.ago)); got != tt.sent {
			t.Errorf("Ago(%s) = %q, want %q", tt.ago, got, tt.sent)
		}
	}
	if Age(now, time.Time{}) != "" || Ago(now, time.Time{}) != "" || Stamp(now, time.Time{}) != "" {
		t.Error("a zero time must be empty")
	}
	if got := Stamp(now, now.Add(-3*time.Hour)); got != "2026-03-14 09:00:00 UTC (3h ago)" {
		t.Errorf("Stamp = %q", got)
	}
}

func TestLatency(t *testing.T) {
	for d, want := range map[time.Duration]string{
		0: "", 800 * time.Microsecond: "800µs", 1200 * time.Microsecond: "1.2ms", 12345 * time.Microsecond: "12ms",
		5000350 * time.Microsecond: "5.0s", 90 * time.Second: "1m30s",
	} {
		if got := Latency(d); got != want {
			t.Errorf("Latency(%s) = %q, want %q", d, got, want)
		}
	}
}

func TestTopology(t *testing.T) {
	if got := Segments(map[string]string{"zone": "a", "node": "n1"}); got != "node=n1, zone=a" {
		t.Errorf("Segments = %q", got)
	}
	ts := []spec.Topology{{Segments: map[string]string{"zone": "a", "rack": "r2"}}, {Segments: map[string]string{"zone": "b"}}}
	if got := Topologies(ts); got != "{rack=r2, zone=a} {zone=b}" {
		t.Errorf("Topologies = %q", got)
	}
	if Bytes(10<<30) != "10 GiB" || Bytes(0) != "" {
		t.Errorf("Bytes(10 GiB) = %q", Bytes(10<<30))
	}
}

// TestEscape: control characters (C0 with newline and tab, DEL, C1) and bytes that are not
// UTF-8 become visible escapes; letters, symbols and backslashes stay as they are.
func TestEscape(t *testing.T) {
	for in, want := range map[string]string{
		"": "",
		"plain 1.0 Größe ✓ 日本語 C:\\data": "plain 1.0 Größe ✓ 日本語 C:\\data",
		"\x1b]0;pwned\x07":               `\x1b]0;pwned\a`,
		"a\nb\tc\rd\x7f":                 `a\nb\tc\rd\x7f`,
		"c1\u009b2J\u0085":               `c1\u009b2J\u0085`,
		"bad\xff\x9bbyte":                `bad\xff\x9bbyte`,
	} {
		if got := Escape(in); got != want {
			t.Errorf("Escape(%q) = %q, want %q", in, got, want)
		}
	}
}

// A node's max_volumes_per_node: unset (0) is no limit, a positive one the limit, and a
// negative one, which CSI forbids and an older volctl recorded as "no limit", is shown as the
// invalid value it is, never as "unlimited".
func TestMaxVolumes(t *testing.T) {
	for n, want := range map[int64]string{0: "unlimited", 7: "7", -1: "-1 (invalid: CSI requires 0 or more)"} {
		if got := MaxVolumes(n); got != want {
			t.Errorf("MaxVolumes(%d) = %q, want %q", n, got, want)
		}
	}
}

// Width counts terminal cells: two for a wide character, none for a combining mark or an
// escape sequence's styling, one for the rest.
func TestWidth(t *testing.T) {
	for s, want := range map[string]int{
		"":                   0,
		"db-0":               4,
		"数据库":                6,
		"e\u0301":            1,
		"\x1b[1mbold\x1b[0m": 4,
		"ünï":                3,
	} {
		if got := Width(s); got != want {
			t.Errorf("Width(%q) = %d, want %d", s, got, want)
		}
	}
}

// TestLatencyAtItsRoundingBoundaries: a latency is rounded before its unit is chosen, so a
// value that rounds up into the next unit is shown in that unit ("1.0ms", not "1000µs"; "10ms",
// not "10.0ms"), and one under a microsecond is not shown as none ("0µs").
func TestLatencyAtItsRoundingBoundaries(t *testing.T) {
	for d, want := range map[time.Duration]string{
		1: "1ns", 499: "499ns", 500: "1µs",
		999*time.Microsecond + 499: "999µs", 999*time.Microsecond + 500: "1.0ms",
		9949 * time.Microsecond: "9.9ms", 9950 * time.Microsecond: "10ms", 9999 * time.Microsecond: "10ms",
		999*time.Millisecond + 499*time.Microsecond: "999ms", 999*time.Millisecond + 500*time.Microsecond: "1.0s",
		59949 * time.Millisecond: "59.9s", 59950 * time.Millisecond: "1m0s", 59999 * time.Millisecond: "1m0s",
		time.Minute + 499*time.Millisecond: "1m0s", time.Minute + 500*time.Millisecond: "1m1s",
	} {
		if got := Latency(d); got != want {
			t.Errorf("Latency(%d) = %q, want %q", int64(d), got, want)
		}
	}
}

// TestBytesAtItsRoundingBoundaries: a size is rounded before its unit is chosen, so one that
// rounds up to 1024 of a unit is shown as 1.0 of the next ("1.0 MiB", not "1024 KiB"), and one
// that rounds up to 10 has no decimal, as every size of 10 or more ("10 KiB", not "10.0 KiB").
func TestBytesAtItsRoundingBoundaries(t *testing.T) {
	for n, want := range map[int64]string{
		1: "1 B", 1023: "1023 B", 1024: "1.0 KiB", 1075: "1.0 KiB", 1076: "1.1 KiB",
		10188: "9.9 KiB", 10189: "10 KiB", 10239: "10 KiB", 10240: "10 KiB",
		1<<20 - 513: "1023 KiB", 1<<20 - 512: "1.0 MiB", 1<<20 - 1: "1.0 MiB", 1 << 20: "1.0 MiB",
		1<<30 - 1: "1.0 GiB", 10 << 30: "10 GiB", 1<<60 - 1: "1.0 EiB", 1<<63 - 1: "8.0 EiB",
	} {
		if got := Bytes(n); got != want {
			t.Errorf("Bytes(%d) = %q, want %q", n, got, want)
		}
	}
}
