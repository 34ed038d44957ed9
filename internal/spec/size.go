package spec

import (
	"errors"
	"fmt"
	"math"
	"math/big"
	"math/bits"
	"strconv"
	"strings"
)

// sizeUnits maps a lower-cased unit suffix to its multiplier. Like Nomad, which parses
// capacities with go-humanize, unit letters are case-insensitive ("10gib" = "10GiB"), the
// IEC units (KiB, Ki, ...) are powers of 1024 and the SI ones (K, KB, ...) powers of 1000.
var sizeUnits = map[string]uint64{
	"": 1, "b": 1,
	"k": 1e3, "kb": 1e3, "ki": 1 << 10, "kib": 1 << 10,
	"m": 1e6, "mb": 1e6, "mi": 1 << 20, "mib": 1 << 20,
	"g": 1e9, "gb": 1e9, "gi": 1 << 30, "gib": 1 << 30,
	"t": 1e12, "tb": 1e12, "ti": 1 << 40, "tib": 1 << 40,
	"p": 1e15, "pb": 1e15, "pi": 1 << 50, "pib": 1 << 50,
	"e": 1e18, "eb": 1e18, "ei": 1 << 60, "eib": 1 << 60,
}

// ParseSize parses a capacity as people write it: "10GiB", "100G", "1.5TiB", "500 MiB", "1,000GiB",
// or a bare number of bytes. Fractions of a byte are dropped. Negative sizes, unknown units and sizes above
// math.MaxInt64 bytes (what CSI's int64 capacity fields hold) are errors.
func ParseSize(s string) (int64, error) {
	in := strings.TrimSpace(s)
	if in == "" {
		return 0, errors.New("empty size")
	}
	if in[0] == '-' {
		return 0, fmt.Errorf("size %q is negative", s)
	}
	end := 0
	for end < len(in) && (in[end] >= '0' && in[end] <= '9' || in[end] == '.' || in[end] == ',') {
		end++
	}
	num, unit := in[:end], strings.ToLower(strings.TrimSpace(in[end:]))
	if strings.Contains(num, ",") {
		// Nomad (go-humanize) drops every comma: "1,000GiB" is 1000GiB, but "1,5GiB" is 15GiB
		// too. Commas are read only where they cannot mean a decimal point: thousands
		// separators before any fraction.
		whole, _, _ := strings.Cut(num, ".")
		if !thousands(whole) || strings.Contains(num[len(whole):], ",") {
			return 0, fmt.Errorf("size %q has a comma that is not a thousands separator (write \"1.5GiB\" for a fraction, \"1500GiB\" or \"1,500GiB\" for a thousand and a half)", s)
		}
		num = strings.ReplaceAll(num, ",", "")
	}
	if num == "" || num == "." || strings.Count(num, ".") > 1 {
		return 0, fmt.Errorf("size %q does not start with a number", s)
	}
	mult, ok := sizeUnits[unit]
	if !ok && len(unit) > 1 && unit[0] == 'e' && strings.ContainsRune("0123456789+-", rune(unit[1])) {
		// "1e3GiB" reads as 1 and the unit "e3GiB": say what the writer meant, which Nomad
		// refuses too (go-humanize reads no exponent).
		return 0, fmt.Errorf("size %q has an unknown unit %q: a size takes no exponent; write the number out%s", s, in[end:], writtenOut(num, in[end:]))
	}
	if !ok {
		return 0, fmt.Errorf("size %q has an unknown unit %q (use B, KB, MB, GB, TB, PB, or KiB, MiB, GiB, TiB, PiB)", s, in[end:])
	}
	whole, frac, _ := strings.Cut(num, ".")
	if frac == "" {
		// The common case needs no big arithmetic.
		if n, err := strconv.ParseUint(whole, 10, 64); err == nil {
			if hi, lo := bits.Mul64(n, mult); hi == 0 && lo <= math.MaxInt64 {
				return int64(lo), nil
			}
			return 0, fmt.Errorf("size %q is too large (the maximum is %d bytes)", s, int64(math.MaxInt64))
		}
	}
	r, ok := new(big.Rat).SetString(num)
	if !ok {
		return 0, fmt.Errorf("size %q does not start with a number", s)
	}
	r.Mul(r, new(big.Rat).SetUint64(mult))
	bytes := new(big.Int).Quo(r.Num(), r.Denom())
	if !bytes.IsInt64() {
		return 0, fmt.Errorf("size %q is too large (the maximum is %d bytes)", s, int64(math.MaxInt64))
	}
	return bytes.Int64(), nil
}

// nomadSize is the size s, one ParseSize reads, as Nomad reads it (go-humanize's ParseBytes,
// through parseCapacityBytes): the number, its commas dropped, as a float64, times the unit, the
// product truncated. Where ParseSize's exact reading holds more digits than a float64 ("2.01GB":
// 2.01 × 1e9 is 2009999999.9999998; "9007199254740993", past 2^53), the two differ by a byte or
// a few. ok is false when the product reaches 2^63, past int64: Nomad's CLI converts the uint64
// ParseBytes gives to int64, and 2^63 wraps to -2^63. ParseSize takes some of those sizes, just
// below 2^63 bytes exactly ("7.999999999999999999EiB", "9223372036854775807"), whose float64
// rounds up to 2^63; callers refuse them (size, TestCapacityNomadWrapsIsRefused).
func nomadSize(s string) (n int64, ok bool) {
	in := strings.TrimSpace(s)
	end := 0
	for end < len(in) && (in[end] >= '0' && in[end] <= '9' || in[end] == '.' || in[end] == ',') {
		end++
	}
	mult, known := sizeUnits[strings.ToLower(strings.TrimSpace(in[end:]))]
	f, err := strconv.ParseFloat(strings.ReplaceAll(in[:end], ",", ""), 64)
	if !known || err != nil {
		return 0, false
	}
	if f *= float64(mult); !(f < math.MaxInt64) {
		return 0, false
	}
	return int64(f), true
}

// MaxNomadSize is the largest capacity Nomad reads as volctl does below 2^63 bytes: the
// largest float64 below 2^63, 2^63-1024.
const MaxNomadSize = 1<<63 - 1024

// writtenOut is " (1000GiB)" for the number num and the rest of a size, an exponent and a unit
// ("e3GiB"), when that is a whole number of a known unit, else "".
func writtenOut(num, rest string) string {
	i := 1
	if i < len(rest) && (rest[i] == '+' || rest[i] == '-') {
		i++
	}
	for i < len(rest) && rest[i] >= '0' && rest[i] <= '9' {
		i++
	}
	exp, err := strconv.Atoi(rest[1:i])
	unit := strings.TrimSpace(rest[i:])
	if _, known := sizeUnits[strings.ToLower(unit)]; err != nil || !known || exp < -18 || exp > 18 {
		return ""
	}
	r, ok := new(big.Rat).SetString(num + "e" + strconv.Itoa(exp))
	if !ok || !r.IsInt() {
		return ""
	}
	return " (" + r.Num().String() + unit + ")"
}

// thousands reports whether s, digits with commas, groups them by three: "1,000", "10,000,000".
func thousands(s string) bool {
	groups := strings.Split(s, ",")
	if n := len(groups[0]); n < 1 || n > 3 {
		return false
	}
	for _, g := range groups[1:] {
		if len(g) != 3 {
			return false
		}
	}
	return true
}

// FormatSize renders n bytes in the shortest form ParseSize reads back exactly: the largest
// unit, IEC or SI, that divides n ("10GiB", "20GB"), else bytes ("1234").
func FormatSize(n int64) string {
	if n <= 0 {
		return strconv.FormatInt(n, 10)
	}
	best, bestMult := "", int64(1)
	for _, u := range sizeFormats {
		if n%u.mult == 0 && u.mult > bestMult {
			best, bestMult = u.name, u.mult
		}
	}
	return strconv.FormatInt(n/bestMult, 10) + best
}

var sizeFormats = []struct {
	name string
	mult int64
}{
	{"KiB", 1 << 10}, {"MiB", 1 << 20}, {"GiB", 1 << 30}, {"TiB", 1 << 40}, {"PiB", 1 << 50}, {"EiB", 1 << 60},
	{"KB", 1e3}, {"MB", 1e6}, {"GB", 1e9}, {"TB", 1e12}, {"PB", 1e15}, {"EB", 1e18},
}
