package cli

import (
	"errors"
	"fmt"
	"regexp"
	"sort"
	"strings"
	"sync"

	"github.com/agext/levenshtein"
	"github.com/spf13/cobra"
	"github.com/spf13/pflag"
)

// Flag errors get a "Did you mean this?" as unknown commands do, with the habits of other tools
// in mind: Nomad's and Go's single-dash long flags (-json, -verbose), kubectl's -o json and
// --output, and plain typos (--jsn). The patterns are compiled when a flag error needs them,
// not by every process.
var (
	unknownShorthand = sync.OnceValue(func() *regexp.Regexp { return regexp.MustCompile(`^unknown shorthand flag: '.' in -(\S+)`) })
	unknownLong      = sync.OnceValue(func() *regexp.Regexp { return regexp.MustCompile(`^unknown flag: --(\S+)`) })
)

// flagSuggestions returns the flags cmd has that the failed flag in err may have meant, as
// they are typed ("--json").
func flagSuggestions(cmd *cobra.Command, err error) []string {
	msg := err.Error()
	var typed string
	if m := unknownShorthand().FindStringSubmatch(msg); m != nil {
		typed = m[1]
	} else if m := unknownLong().FindStringSubmatch(msg); m != nil {
		typed = m[1]
	} else {
		return nil
	}
	typed, _, _ = strings.Cut(typed, "=")
	has := func(name string) bool { return cmd.Flags().Lookup(name) != nil }
	switch {
	case typed == "" || typed == "-":
		return nil
	case has(typed): // -json for --json, -state-dir for --state-dir
		return []string{"--" + typed}
	case typed == "o" || typed == "output" || typed == "format":
		// kubectl's -o json, -o yaml, --output, --format: volctl has --json and -t.
		var out []string
		if has("json") {
			out = append(out, "--json")
		}
		if has("template") {
			out = append(out, "-t TEMPLATE")
		}
		return out
	}
	type cand struct {
		name string
		dist int
	}
	var cands []cand
	cmd.Flags().VisitAll(func(f *pflag.Flag) {
		if f.Hidden {
			return
		}
		// Near in proportion to what was typed, or begun by it: any one- or two-letter name is
		// within two edits of every short flag, and `-a`, `-s`, `-f` were all answered --jq
		// (`-g` --arg, which, followed, exported with a task argument in place of the group
		// asked) (TestShorthandTypoIsNotAnsweredWithAnUnrelatedFlag).
		d := levenshtein.Distance(typed, f.Name, nil)
		if (d <= 2 && 2*d <= len(typed)) || strings.HasPrefix(f.Name, typed) {
			cands = append(cands, cand{f.Name, d})
		}
	})
	sort.SliceStable(cands, func(i, j int) bool {
		if cands[i].dist != cands[j].dist {
			return cands[i].dist < cands[j].dist
		}
		return cands[i].name < cands[j].name
	})
	var out []string
	for _, c := range cands { // the nearest ones only: --jsn is --json, not also --jq
		if c.dist == cands[0].dist || strings.HasPrefix(c.name, typed) {
			out = append(out, "--"+c.name)
		}
	}
	return out
}

// flagHint is what follows a flag error: the suggestions for it, in the form cobra gives for
// commands, or nothing.
func flagHint(cmd *cobra.Command, err error) string {
	if s := flagSuggestions(cmd, err); len(s) > 0 {
		return "\n\nDid you mean this?\n\t" + strings.Join(s, "\n\t")
	}
	return ""
}

// didYouMean is the suggestion the spec validator made for a value (spec.Suggest), in the form
// flags and commands get: "\n\nDid you mean this?\n\tx", or nothing.
func didYouMean(suggestion string) string {
	if suggestion == "" {
		return ""
	}
	return "\n\nDid you mean this?\n\t" + suggestion
}

// flagErrorShown is err, a flag error of pflag's, with any value it quotes from the command line
// cut: an unknown shorthand's word ("-secret=token=VALUE", Nomad's single-dash habit) and a
// bad flag syntax's ("---secret=token=VALUE") are shown up to their "=", since the value may be
// a secret or a mount flag's password. Before, both were quoted whole on stderr
// (TestMistypedSecretFlagsValueIsNotEchoed); the hints read err itself.
func flagErrorShown(err error) error {
	cut := func(word string) string {
		if name, _, ok := strings.Cut(word, "="); ok {
			return name + "=… (its value not shown)"
		}
		return word
	}
	var unknown *pflag.NotExistError
	if errors.As(err, &unknown) && unknown.GetSpecifiedShortnames() != "" && unknown.GetSpecifiedName() != "" {
		return fmt.Errorf("unknown shorthand flag: %q in -%s", rune(unknown.GetSpecifiedName()[0]), cut(unknown.GetSpecifiedShortnames()))
	}
	var syntax *pflag.InvalidSyntaxError
	if errors.As(err, &syntax) {
		return fmt.Errorf("bad flag syntax: %s", cut(syntax.GetSpecifiedFlag()))
	}
	return err
}
