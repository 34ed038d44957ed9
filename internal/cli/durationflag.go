package cli

import (
	"time"

	"github.com/spf13/pflag"

	"github.com/volctl/volctl/internal/spec"
)

// durationVar is pflag's DurationVar read by spec.ParseDuration: a value it cannot read says
// what is wrong with it ("longer than the longest duration", "takes no exponent", "has no
// unit"), in the words of the agent's flags and of a spec's durations, not Go's "time: invalid
// duration" for all of it (TestEveryDurationFlagSaysWhatIsWrong). Its checks of sign and zero
// stay the commands' own (a timeout of 0 is the default here, a refusal there).
func durationVar(fl *pflag.FlagSet, p *time.Duration, name string, def time.Duration, usage string) {
	*p = def
	fl.Var(durationValue{p}, name, usage)
}

type durationValue struct{ d *time.Duration }

func (v durationValue) Type() string { return "duration" }

// String is "0" for zero, as pflag's own duration flag shows no "(default 0s)" in help.
func (v durationValue) String() string {
	if *v.d == 0 {
		return "0"
	}
	return v.d.String()
}

func (v durationValue) Set(s string) error {
	d, err := spec.ParseDuration(s)
	if err != nil {
		return err
	}
	*v.d = d
	return nil
}
