package spec

import (
	"strings"
	"testing"
)

// TestCapacityNomadReadsOtherwiseIsWarned: Nomad reads a capacity with go-humanize's ParseBytes,
// which multiplies the number, a float64, by the unit and truncates: "2.01GB" is 2009999999
// bytes there (2.01 × 1e9 is 2009999999.9999998 in floating point), "9007199254740993" is
// 9007199254740992 (past 2^53 a float64 holds even numbers only). volctl reads the exact bytes
// written (a volume made from the file before keeps its size, and `volume expand --size` reads
// the same text alike: review31e), and warns at the value with both readings and, where there
// is one, a form both read alike, so that `nomad volume create` of the file can ask for the
// same bytes.
func TestCapacityNomadReadsOtherwiseIsWarned(t *testing.T) {
	line := strings.Count(baseVolume, "\n") + 1
	for _, c := range []struct {
		name, src string
		want      int64
		detail    string
	}{
		{"SI fraction", `capacity_max = "2.01GB"`, 2010000000, `volctl reads "2.01GB" as 2010000000 bytes, Nomad as 2009999999`},
		{"fraction of a TB", `capacity_max = "4.35 TB"`, 4350000000000, `write "4350GB"`},
		{"past 2^53", `capacity_max = "9007199254740993"`, 9007199254740993, `as 9007199254740993 bytes, Nomad as 9007199254740992`},
		{"a number", `capacity_max = 9007199254740993`, 9007199254740993, `Nomad as 9007199254740992`},
	} {
		v, diags := ParseVolume("v.hcl", []byte(baseVolume+c.src+"\n"), VerbAny)
		if v == nil {
			t.Errorf("%s: refused: %v", c.name, diags)
			continue
		}
		if v.CapacityMax != c.want {
			t.Errorf("%s: capacity_max %d, want the exact %d", c.name, v.CapacityMax, c.want)
		}
		if d := diagAt(t, c.name, diags, "Capacity Nomad reads otherwise", line, 16); d != nil && !strings.Contains(d.Detail, c.detail) {
			t.Errorf("%s: %q, want %q", c.name, d.Detail, c.detail)
		}
	}
	for _, s := range []string{`"1.5GiB"`, `"2.5GB"`, `"2010MB"`, `"1,000GiB"`, `"0.5KiB"`, `1024`, `"7EiB"`, `"9007199254740992"`} {
		v, diags := ParseVolume("v.hcl", []byte(baseVolume+"capacity_max = "+s+"\n"), VerbAny)
		if v == nil || len(diags) > 0 {
			t.Errorf("%s: %v, want it read without a warning, as Nomad reads it alike", s, diags)
		}
	}
}
