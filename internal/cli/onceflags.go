package cli

import (
	"fmt"

	"github.com/spf13/cobra"
	"github.com/spf13/pflag"
)

// A flag that takes one value keeps the last one given, as pflag parses it: `volctl volume
// claim db --alloc web-0 ... --alloc web-1` claimed for web-1, `-t X -t Y` printed Y, and
// `volctl --state-dir /srv/a ... --state-dir /srv/b` (a wrapper's defaults, then the user's)
// acted on the state dir the command line names last, with nothing said. Which one was meant
// is a guess volctl does not make: a flag given again with another value is a usage error
// naming both. Given again with the same value (--json --json, --alloc a --alloc a) it means
// one thing, and is taken. A flag whose default is empty given empty is refused too, as an
// empty argument is, and so is a text flag with a default given empty. Flags meant to be repeated (--parameter, --secret: pflag's slice
// and array values) take each value given, but not an empty one (nonEmptyItems), unless the
// flag says an empty one means something (takesEmptyItems: export nomad's --arg, an empty
// argument of the task's command).

// onceValue is a flag's value that refuses a second, different value.
type onceValue struct {
	pflag.Value
	flag  *pflag.Flag
	first string // the value as given the first time
}

func (v *onceValue) Set(s string) error {
	if s == "" && v.flag.DefValue == "" {
		// Empty is what the flag is when not given: a variable left unset
		// (--state-dir "$STATE", events --volume "$V") would quietly be the default (the
		// system's state dir, every volume's events), as an empty argument would be
		// (argsChecker).
		return emptyFlagError(v.flag)
	}
	if s == "" && v.flag.Value.Type() == "string" {
		// A text flag with a default: export nomad's --driver "" and --nomad-data-dir ""
		// were that default (exec, /opt/nomad/data) silently, and agent --log-format ""
		// text (TestTextFlagWithADefaultGivenEmptyIsRefused).
		return fmt.Errorf("--%s is empty: give a value, or leave the flag out for the default, %s (a variable left unset?)", v.flag.Name, v.flag.DefValue)
	}
	if !v.flag.Changed {
		v.first = s
		return v.Value.Set(s)
	}
	was := v.Value.String()
	if err := v.Value.Set(s); err != nil {
		return err
	}
	if v.Value.String() != was {
		return fmt.Errorf("--%s was given before as %q: give it once (volctl does not guess which of the two was meant)", v.flag.Name, v.first)
	}
	return nil
}

func emptyFlagError(f *pflag.Flag) error {
	return fmt.Errorf("--%s is empty: give a value, or leave the flag out (a variable left unset?)", f.Name)
}

// sliceValue is a repeatable flag's value, as pflag makes them.
type sliceValue interface {
	pflag.Value
	pflag.SliceValue
}

// nonEmptyItems is a repeatable flag's value that refuses an empty value: export nomad's
// --group "$G" with $G unset looked for a group named "" (exit 1, a runtime error),
// --group-file "" read the file "" ("read : no such file or directory", naming nothing) and
// --datacenter "" wrote jobs with datacenters = [""], which Nomad refuses
// (TestRepeatableFlagGivenEmptyIsRefused).
type nonEmptyItems struct {
	sliceValue
	flag *pflag.Flag
}

func (v *nonEmptyItems) Set(s string) error {
	if s == "" {
		return emptyFlagError(v.flag)
	}
	return v.sliceValue.Set(s)
}

// takesEmptyItems marks a repeatable flag for which an empty value means something.
const takesEmptyItems = "volctl_takes_empty_items"

// refuseRepeatedFlags makes every flag of c and its subcommands that takes one value a
// onceValue, and every repeatable one not marked takesEmptyItems a nonEmptyItems.
func refuseRepeatedFlags(c *cobra.Command) {
	once := func(f *pflag.Flag) {
		switch v := f.Value.(type) {
		case *onceValue, *nonEmptyItems:
			return
		case sliceValue:
			if f.Annotations[takesEmptyItems] == nil {
				f.Value = &nonEmptyItems{v, f}
			}
			return
		}
		f.Value = &onceValue{Value: f.Value, flag: f}
		// pflag's help leaves out a zero default by the value's own type, which it no longer
		// sees: "0s", a zero duration's, is written as the other zeros are, "0".
		if f.DefValue == "0s" {
			f.DefValue = "0"
		}
	}
	c.Flags().VisitAll(once)
	c.PersistentFlags().VisitAll(once)
	for _, sub := range c.Commands() {
		refuseRepeatedFlags(sub)
	}
}
