package cli

import (
	"errors"
	"fmt"
	"math"
	"strconv"

	"github.com/spf13/pflag"
)

// intVar is pflag's IntVar (and Int64Var, IntVarP) whose refusal says what is wrong with the
// value, "is not a whole number" or "is out of range" with the range, not Go's
// `strconv.ParseInt: parsing "1x": invalid syntax` (TestEveryIntFlagSaysWhatIsWrong). It reads
// decimal digits only: pflag's base prefixes read a count a script padded with zeros ("010",
// printf %03d) as octal, 8, and refused "09" as no whole number
// (TestIntFlagWithALeadingZeroIsNotReadAsOctal). Its type shows in help as pflag's.
// The commands check sign and bounds of their own (a --limit of -1, --events 0).
func intVar[T int | int64](fl *pflag.FlagSet, p *T, name, shorthand string, def T, usage string) {
	*p = def
	fl.VarP(intValue[T]{p}, name, shorthand, usage)
}

type intValue[T int | int64] struct{ p *T }

func (v intValue[T]) String() string { return strconv.FormatInt(int64(*v.p), 10) }

func (v intValue[T]) Type() string {
	if _, ok := any(*v.p).(int64); ok {
		return "int64"
	}
	return "int"
}

func (v intValue[T]) Set(s string) error {
	bits := 64
	if v.Type() == "int" {
		bits = strconv.IntSize
	}
	n, err := strconv.ParseInt(s, 10, bits)
	switch {
	case errors.Is(err, strconv.ErrRange):
		return fmt.Errorf("%q is out of range: give a whole number from %d to %d", s, int64(-1)<<(bits-1), int64(uint64(math.MaxUint64)>>(65-bits)))
	case err != nil:
		return fmt.Errorf("%q is not a whole number in decimal digits", s)
	}
	*v.p = T(n)
	return nil
}
