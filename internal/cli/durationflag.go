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
	fl.Var(durationValue{d: p}, name, usage)
}

// boundedDurationVar is durationVar of a flag held to bounds: a timeout or a period, which
// below its least fails for nothing or keeps volctl and a plugin busy, as the agent's settings
// are held (spec.CheckAgentSetting). plugin probe --timeout 1ns failed every probe, "did not
// complete the gRPC handshake within 1ns", blaming a healthy plugin, and tui --refresh 1ns or
// --probe 1ns read the state or probed every plugin back to back
// (TestEveryDurationFlagIsBounded).
func boundedDurationVar(fl *pflag.FlagSet, p *time.Duration, name string, def time.Duration, b spec.DurationBounds, usage string) {
	*p = def
	fl.Var(durationValue{d: p, bounds: &b}, name, usage)
}

type durationValue struct {
	d      *time.Duration
	bounds *spec.DurationBounds // nil: any duration (the command checks sign and zero)
}

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
	if v.bounds != nil {
		if err := v.bounds.Check(d); err != nil {
			return err
		}
	}
	*v.d = d
	return nil
}
