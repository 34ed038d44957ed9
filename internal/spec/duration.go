package spec

import (
	"fmt"
	"regexp"
	"time"
)

var (
	durationForm   = regexp.MustCompile(`^[+-]?(([0-9]+\.?[0-9]*|\.[0-9]+)(ns|us|µs|μs|ms|s|m|h))+$`)
	exponentForm   = regexp.MustCompile(`^[+-]?([0-9]+\.?[0-9]*|\.[0-9]+)[eE][+-]?[0-9]`)
	unitlessNumber = regexp.MustCompile(`^[+-]?([0-9]+\.?[0-9]*|\.[0-9]+)$`)
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
	switch {
	case durationForm.MatchString(s):
		return 0, fmt.Errorf("%q is longer than the longest duration volctl holds (2562047h, about 292 years)", shown(s))
	case exponentForm.MatchString(s):
		return 0, fmt.Errorf("%q is not a duration: a duration takes no exponent", shown(s))
	case unitlessNumber.MatchString(s):
		return 0, fmt.Errorf("%q is not a duration: it has no unit (ns, us, ms, s, m or h)", shown(s))
	}
	return 0, fmt.Errorf("%q is not a duration", shown(s))
}
