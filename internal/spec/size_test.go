package spec

import (
	"math"
	"strings"
	"testing"
)

func TestParseSize(t *testing.T) {
	tests := []struct {
		in      string
		want    int64
		wantErr string
	}{
		{"10GiB", 10 << 30, ""},
		{"100G", 100e9, ""},
		{"1.5TiB", 3 << 39, ""},
		{"500MiB", 500 << 20, ""},
		{"500 MiB", 500 << 20, ""},
		{"  2 GB  ", 2e9, ""},
		{"1048576", 1 << 20, ""},
		{"0", 0, ""},
		{"100B", 100, ""},
		{"1K", 1000, ""},
		{"1KB", 1000, ""},
		{"1KiB", 1024, ""},
		{"1kib", 1024, ""},
		{"1Gi", 1 << 30, ""},
		{"10gib", 10 << 30, ""},
		{"3M", 3e6, ""},
		{"3mb", 3e6, ""},
		{"2T", 2e12, ""},
		{"1P", 1e15, ""},
		{"1PB", 1e15, ""},
		{"2PiB", 2 << 50, ""},
		{"7EiB", 7 << 60, ""},
		{"0.5K", 500, ""},
		{"1.0000001KiB", 1024, ""}, // fractions of a byte are dropped
		{".5GiB", 1 << 29, ""},     // a leading dot is a number
		{"9223372036854775807", math.MaxInt64, ""},
		{"", 0, "empty"},
		{"   ", 0, "empty"},
		{"-1GiB", 0, "negative"},
		{"-0", 0, "negative"},
		{"ten gigs", 0, "does not start with a number"},
		{"GiB", 0, "does not start with a number"},
		{".", 0, "does not start with a number"},
		{"1.2.3G", 0, "does not start with a number"},
		{"10 GiBs", 0, "unknown unit"},
		{"10X", 0, "unknown unit"},
		{"1e9", 0, "unknown unit"},
		{"1e3GiB", 0, "a size takes no exponent; write the number out (1000GiB)"},
		{"1.5e2 KiB", 0, "write the number out (150KiB)"},
		{"1e3XB", 0, "write the number out"},
		{"1E+3", 0, "a size takes no exponent"},
		{"1e", 1e18, ""}, // one exabyte: the SI unit E
		{"+5G", 0, "does not start with a number"},
		{"8EiB", 0, "too large"},
		{"9223372036854775808", 0, "too large"},
		{"99999999999999999999999", 0, "too large"},
		{"10000PB", 0, "too large"},
		{"9.3EB", 0, "too large"},
		// Nomad drops commas; volctl reads them only as thousands separators, never as a
		// decimal comma that Nomad would turn into ten times the size.
		{"1,000GiB", 1000 << 30, ""},
		{"10,000,000", 10e6, ""},
		{"1,500.5MB", 1500500000, ""},
		{"1,5GiB", 0, "not a thousands separator"},
		{"1000,000", 0, "not a thousands separator"},
		{",5G", 0, "not a thousands separator"},
		{"1,000.5,0G", 0, "not a thousands separator"},
		{"1,,000G", 0, "not a thousands separator"},
	}
	for _, tt := range tests {
		t.Run(tt.in, func(t *testing.T) {
			got, err := ParseSize(tt.in)
			if tt.wantErr != "" {
				if err == nil || !strings.Contains(err.Error(), tt.wantErr) {
					t.Fatalf("ParseSize(%q) = %d, %v; want error containing %q", tt.in, got, err, tt.wantErr)
				}
				if !strings.Contains(err.Error(), tt.in) && strings.TrimSpace(tt.in) != "" {
					t.Errorf("error %q does not name the input", err)
				}
				return
			}
			if err != nil || got != tt.want {
				t.Fatalf("ParseSize(%q) = %d, %v; want %d", tt.in, got, err, tt.want)
			}
		})
	}
}

func TestFormatSize(t *testing.T) {
	tests := []struct {
		in   int64
		want string
	}{
		{0, "0"},
		{1, "1"},
		{1023, "1023"},
		{1024, "1KiB"},
		{1000, "1KB"},
		{10 << 30, "10GiB"},
		{20e9, "20GB"},
		{3 << 39, "1536GiB"}, // 1.5TiB: the largest unit that divides it exactly
		{math.MaxInt64, "9223372036854775807"},
	}
	for _, tt := range tests {
		got := FormatSize(tt.in)
		if got != tt.want {
			t.Errorf("FormatSize(%d) = %q, want %q", tt.in, got, tt.want)
		}
		if back, err := ParseSize(got); err != nil || back != tt.in {
			t.Errorf("ParseSize(FormatSize(%d)) = %d, %v", tt.in, back, err)
		}
	}
}

// FuzzParseSize: ParseSize never panics, never returns a negative size, and every size it
// returns survives a round trip through FormatSize.
func FuzzParseSize(f *testing.F) {
	for _, s := range []string{"10GiB", "100G", "1.5TiB", "500 MiB", "0", "-1", "8EiB", ".5k", "1e9", "9223372036854775807"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		n, err := ParseSize(s)
		if err != nil {
			return
		}
		if n < 0 {
			t.Fatalf("ParseSize(%q) = %d", s, n)
		}
		if back, err := ParseSize(FormatSize(n)); err != nil || back != n {
			t.Fatalf("round trip of %d via %q: %d, %v", n, FormatSize(n), back, err)
		}
	})
}
