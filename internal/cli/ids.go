package cli

import (
	"fmt"
	"strings"

	"github.com/spf13/pflag"
	"golang.org/x/text/unicode/norm"
)

// typedID is an ID typed on the command line (a volume, plugin or group ID, an alloc) as volctl
// stores IDs: in Unicode normal form C. A spec's IDs are read in NFC (HCL normalises every
// string; plugin and group labels are normalised as they are read), and a terminal may send
// "é" decomposed (e U+0301): read as typed, it would name no volume, or register a plugin no
// volume's plugin_id names. An ID an older volctl stored as typed, decomposed, is still found by
// its NFC form (engine byStoredID); the plugin's own IDs (snapshot and external IDs) are bytes
// to the plugin and never pass through here.
func typedID(s string) string { return norm.NFC.String(s) }

// namedExactly reports whether the volume an engine lookup found by id (which resolves a
// prefix too) is the one id names: stored as id, or, by an older volctl, in another normal form
// of it (engine byStoredID), not one whose ID id only begins.
func namedExactly(stored, id string) bool { return stored == id || typedID(stored) == id }

// idArg is a bind for runOpts that stores the first argument, an ID, in dst (typedID).
func idArg(dst *string) func([]string) {
	return func(args []string) {
		if len(args) > 0 {
			*dst = typedID(args[0])
		}
	}
}

// idArgs is a bind for runOpts that stores the arguments, IDs, in dst (typedID).
func idArgs(dst *[]string) func([]string) {
	return func(args []string) {
		*dst = typedIDs(args)
	}
}

func typedIDs(args []string) []string {
	ids := make([]string, len(args))
	for i, a := range args {
		ids[i] = typedID(a)
	}
	return ids
}

// idFlag is a string flag holding an ID, stored as typedID makes it. Its type reads "string",
// as a StringVar's does.
type idFlag struct{ p *string }

func (f idFlag) String() string { return *f.p }
func (f idFlag) Type() string   { return "string" }
func (f idFlag) Set(s string) error {
	// No ID volctl has begins with "-" (spec.ValidateID: it would read as a flag): such a value
	// is the next flag, taken as this one's with its value left out. `events --volume --json`
	// printed "No events match." in text, exit 0 (TestIDFilterThatIsAFlagIsRefused).
	if strings.HasPrefix(s, "-") {
		return fmt.Errorf("%q begins with \"-\": no ID does (it would read as a flag); was the value left out before the next flag?", s)
	}
	*f.p = typedID(s)
	return nil
}

// idVar defines an ID flag (idFlag) on fs.
func idVar(fs *pflag.FlagSet, p *string, name, usage string) {
	fs.Var(idFlag{p}, name, usage)
}
