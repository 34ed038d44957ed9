package spec

import (
	"fmt"
	"strings"
	"time"
)

// ParseDuration is time.ParseDuration with words for what is wrong, for a setting's diagnostic
// or a flag's error to begin with: time's "invalid duration" is the same for "soon", for
// "9999999999999h" (longer than a time.Duration holds) and for "1e309s" (an exponent), and a
// setting said `"9999999999999h" is not a duration` of a duration too long
// (TestDurationProblemsAreNamed).
func ParseDuration(s string) (time.Duration, error) {
	d, err := time.ParseDuration(s)
	if err == nil {
		return d, nil
	}
	unsigned := strings.TrimLeft(s, "+-")
	if len(s)-len(unsigned) > 1 {
		return 0, fmt.Errorf("%q is not a duration", shown(s))
	}
	n := numberPrefix(unsigned)
	switch rest := unsigned[n:]; {
	case n == 0:
	case durationShaped(unsigned):
		return 0, fmt.Errorf("%q is longer than the longest duration volctl holds (2562047h, about 292 years)", shown(s))
	case rest == "":
		return 0, fmt.Errorf("%q is not a duration: it has no unit (ns, us, ms, s, m or h)", shown(s))
	case (rest[0] == 'e' || rest[0] == 'E') && numberPrefix(strings.TrimLeft(rest[1:], "+-")) > 0:
		return 0, fmt.Errorf("%q is not a duration: a duration takes no exponent", shown(s))
	}
	return 0, fmt.Errorf("%q is not a duration", shown(s))
}

// durationShaped reports whether s is written as a duration is, numbers each with a unit
// (its sign taken off), whatever its size.
func durationShaped(s string) bool {
	for s != "" {
		n := numberPrefix(s)
		if n == 0 {
			return false
		}
		s = s[n:]
		unit := len(s) - len(strings.TrimLeft(s, "nuµμmsh"))
		switch s[:unit] {
		case "ns", "us", "µs", "μs", "ms", "s", "m", "h":
		default:
			return false
		}
		s = s[unit:]
	}
	return true
}

// numberPrefix is the length of the decimal number s begins with (digits, a point, digits,
// at least one digit), 0 when it begins with none.
func numberPrefix(s string) int {
	digits, i := 0, 0
	for ; i < len(s) && s[i] >= '0' && s[i] <= '9'; i++ {
		digits++
	}
	if i < len(s) && s[i] == '.' {
		for i++; i < len(s) && s[i] >= '0' && s[i] <= '9'; i++ {
			digits++
		}
	}
	if digits == 0 {
		return 0
	}
	return i
}
