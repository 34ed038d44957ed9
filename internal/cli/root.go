package cli

import (
	"context"
	"fmt"
	"slices"
	"strings"

	"github.com/spf13/cobra"
	"github.com/spf13/pflag"

	"github.com/volctl/volctl/internal/buildinfo"
	"github.com/volctl/volctl/internal/shellquote"
)

// NewRootCmd builds the volctl command tree.
func NewRootCmd(f *Factory) *cobra.Command {
	return NewRootCmdFor(f, nil)
}

// NewRootCmdFor builds the tree that runs args (os.Args[1:]): when the first argument names a
// top-level command, only that command's subtree, since building every command's flags is
// work a process does for nothing (issue 16's start-up: about 0.3 ms of `volctl version`'s
// 6 ms here, BENCHMARKS.md). Anything else (no argument, a flag first, help, completion,
// cobra's hidden __complete, a mistyped name wanting suggestions) gets the whole tree. A
// command behaves the same in either tree: its help, flags and errors depend only on it
// and its parents (TestOneCommandsTreeRunsAsTheWholeOne).
//
// A command that only groups others and has a table of them (volume, plugin: makeFor) is built
// the same way one level down: `volume claim` builds volume with claim alone (the rest of the
// volume subtree, its flags and their completions, cost each claim and release about 250,000
// instructions). A second argument that names none of its subcommands (an alias, a flag, a
// mistyped name) gets the group whole (subcommandsFor).
func NewRootCmdFor(f *Factory, args []string) *cobra.Command {
	f.args = args
	return newRoot(f, subcommandsFor(f, topCommands, args))
}

// versionLine is the template function, registered with cobra once per process, that --version
// prints: buildinfo.String, the line `volctl version` prints.
const versionLine = "volctlVersionLine"

func init() { cobra.AddTemplateFunc(versionLine, buildinfo.String) }

// topCommand is one top-level command, or one subcommand in a group's table: its name (none
// has an alias; the test checks the table against what each constructor builds) and its
// constructor: make, or makeFor for a command that groups others from a table of its own
// (volume, plugin), which builds it for the arguments after its name (subcommandsFor).
type topCommand struct {
	name    string
	make    func(*Factory) *cobra.Command
	makeFor func(f *Factory, args []string) *cobra.Command
}

// build builds the command for the arguments after its name.
func (tc topCommand) build(f *Factory, args []string) *cobra.Command {
	if tc.makeFor != nil {
		return tc.makeFor(f, args)
	}
	return tc.make(f)
}

// subcommandsFor builds the commands of table that args (those after their parent's name)
// need: the one args[0] names, or, when it names none, all of them.
func subcommandsFor(f *Factory, table []topCommand, args []string) []*cobra.Command {
	if len(args) > 0 {
		for _, tc := range table {
			if tc.name == args[0] {
				return []*cobra.Command{tc.build(f, args[1:])}
			}
		}
	}
	cmds := make([]*cobra.Command, len(table))
	for i, tc := range table {
		cmds[i] = tc.build(f, nil)
	}
	return cmds
}

// topCommands are volctl's top-level commands, in the order help lists them.
var topCommands = []topCommand{
	{name: "version", make: newCmdVersion},
	{name: "validate", make: func(f *Factory) *cobra.Command { return newCmdValidate(f, nil) }},
	{name: "init", make: func(f *Factory) *cobra.Command { return newCmdInit(f, nil) }},
	{name: "plugin", makeFor: newCmdPlugin},
	{name: "volume", makeFor: newCmdVolume},
	{name: "group", make: newCmdGroup},
	{name: "register", make: func(f *Factory) *cobra.Command { return newCmdRegister(f, nil) }},
	{name: "create", make: func(f *Factory) *cobra.Command { return newCmdCreate(f, nil) }},
	{name: "status", make: func(f *Factory) *cobra.Command { return newCmdStatus(f, nil) }},
	{name: "reconcile", make: func(f *Factory) *cobra.Command { return newCmdReconcile(f, nil) }},
	{name: "events", make: func(f *Factory) *cobra.Command { return newCmdEvents(f, nil) }},
	{name: "agent", make: func(f *Factory) *cobra.Command { return newCmdAgent(f, nil) }},
	{name: "tui", make: func(f *Factory) *cobra.Command { return newCmdTUI(f, nil) }},
	{name: "quickstart", make: func(f *Factory) *cobra.Command { return newCmdQuickstart(f, nil) }},
	{name: "export", make: newCmdExport},
	{name: "nomad", make: newCmdNomad},
}

// newRoot builds the root command with the top-level commands cmds.
func newRoot(f *Factory, cmds []*cobra.Command) *cobra.Command {
	root := &cobra.Command{
		Use:   "volctl",
		Short: "Orchestrate CSI volumes on one host",
		Long: `volctl orchestrates CSI volumes on one host, as Nomad's CSI subsystem does in a cluster.
It reads Nomad volume specs, validates them, and runs the claim, publish and release lifecycle
against CSI plugins on local unix sockets. State lives in one SQLite file in the state dir.

Exit codes: 0 ok, 1 runtime error, 2 usage or invalid spec, 3 declined, 4 conflict (claim
refused, volume in use), 70 volctl crashed (a panic: a bug in volctl, its text on stderr;
` + "`volctl reconcile`" + ` finishes what it left half-done; please report it). The same with
--json, --jq and -t. A command stopped by SIGINT, SIGTERM or SIGHUP exits 1 saying where it
stopped (agent, plugin serve, tui and events --follow, which run until stopped: 0). Output that
cannot be written to stdout (a full disk) is exit 1, "writing to standard output: ..."; a
reader gone (` + "`| head -1`" + `) ends a command that only reads
quietly, by SIGPIPE as any filter, and one that changes the state finishes its work, then
exits 1, its stderr saying what it did, which stands (a claim: how to release it); so does one
whose --jq or -t fails on its result: 2 is for what is refused before anything is done.`,
		SilenceUsage:  true,
		SilenceErrors: true,
	}
	root.SetIn(f.IO.In)
	root.SetOut(f.IO.Out)
	root.SetErr(f.IO.ErrOut)
	root.SetFlagErrorFunc(func(cmd *cobra.Command, err error) error {
		return &flagError{err: fmt.Errorf("%w%s\nSee '%s --help'.", flagErrorShown(err), flagHint(cmd, err), cmd.CommandPath())}
	})
	// --version as well as `volctl version`, printing the same line. The line is made when it
	// is printed (versionLine): reading the binary's build information (debug.ReadBuildInfo)
	// costs every process about 70,000 instructions, and cobra needs Version only to be set
	// (it adds the flag then) and only prints it through the template.
	root.Version = buildinfo.Version
	if root.Version == "" {
		root.Version = "dev"
	}
	root.SetVersionTemplate("{{" + versionLine + "}}\n")
	wrapHelp(root)

	pf := root.PersistentFlags()
	pf.StringVar(&f.stateDirFlag, "state-dir", "", "state directory (default $VOLCTL_STATE_DIR, /var/lib/volctl as root, else $XDG_STATE_HOME/volctl, or $HOME/.local/state/volctl without it)")
	pf.BoolVarP(&f.verbose, "verbose", "v", false, "log debug output and CSI RPC traces (secrets redacted) to stderr")
	verbose := pf.Lookup("verbose")
	f.verboseGiven = func() bool { return verbose.Changed }
	// Before any command runs; not before a completion, which prints nothing a user would read,
	// nor help or the completion scripts, which log nothing (`source <(volctl completion bash)`
	// in a shell's rc file must not stop working over a log level).
	root.PersistentPreRunE = func(cmd *cobra.Command, _ []string) error {
		if logsNothing(cmd) {
			return nil
		}
		if cmd.Annotations[ownStateDir] != "" {
			// Its advice is of its own temporary state, never the one given: rewritten, a
			// failed quickstart's "`volctl volume detach demo --force --yes`" named the
			// user's state (TestQuickstartErrorsDoNotAdviseTheUsersStateDir).
			f.ownState = true
			if f.stateDirFlag != "" {
				fmt.Fprintf(f.IO.ErrOut, "Note: %s works in a temporary state dir of its own: --state-dir %s is not used\n", cmd.CommandPath(), escapeLines(shellquote.Arg(f.stateDirFlag)))
			}
		}
		f.adviseStateDir()
		return f.checkLogVariable()
	}

	root.AddCommand(cmds...)
	if len(cmds) == len(topCommands) {
		root.InitDefaultCompletionCmd() // now, not at Execute, so that the walks below see it
	} else {
		// The completion command, which cobra adds at Execute, writes scripts from the whole
		// tree: it is never a tree of one command.
		root.CompletionOptions.DisableDefaultCmd = true
	}
	rejectUnknownSubcommands(root)
	if len(cmds) == len(topCommands) {
		// `volctl help ...` is built the whole tree (its first argument names no command of
		// topCommands); a tree of one command adds cobra's help at Execute, as before, unused.
		strictHelpTopics(root)
	}
	registerCompletions(root, f)
	refuseRepeatedFlags(root)
	return root
}

// rejectUnknownSubcommands makes the root and every command that only groups others (volume,
// plugin, volume snapshot, completion, ...) refuse an argument that is none of its subcommands:
// exit 2 with suggestions, as a typed usage error. Cobra gives such a command its help and exit
// 0, which a script takes for success (`volctl volume stauts` would pass a CI check), and words
// the root's refusal in an untyped error that only its text would tell apart.
func rejectUnknownSubcommands(c *cobra.Command) {
	for _, sub := range c.Commands() {
		rejectUnknownSubcommands(sub)
	}
	if c.Args != nil && c.Parent() != nil && c.Parent().Name() == "completion" {
		// cobra's own completion scripts' NoArgs says "unknown command" as a plain error,
		// exit 1, where every other command given an argument it takes none of exits 2
		// (TestCompletionScriptGivenAnArgumentIsAUsageError).
		args := c.Args
		c.Args = func(cmd *cobra.Command, a []string) error {
			if err := args(cmd, a); err != nil {
				return &flagError{err: err}
			}
			return nil
		}
	}
	if !c.HasSubCommands() || c.Runnable() {
		return
	}
	c.Args = cobra.ArbitraryArgs
	c.RunE = func(cmd *cobra.Command, args []string) error {
		if len(args) == 0 {
			return cmd.Help()
		}
		// A command's own name after `--` (which makes every word after it an argument) is
		// not unknown: it was called so, and suggested back as itself
		// (TestCommandNameAfterDoubleDashIsNotCalledUnknown).
		if sub, rest, err := cmd.Find(args); err == nil && sub != cmd {
			return &flagError{err: fmt.Errorf("%q after `--` is an argument, not the command %q: `--` ends the flags and the command names; leave it out: `%s`\nSee '%s --help'.",
				args[0], sub.CommandPath(), lineWithoutDashes(sub, rest), cmd.CommandPath())}
		}
		msg := fmt.Sprintf("unknown command %q for %q", args[0], cmd.CommandPath())
		if cmd.SuggestionsMinimumDistance <= 0 {
			cmd.SuggestionsMinimumDistance = 2
		}
		if s := cmd.SuggestionsFor(args[0]); len(s) > 0 {
			msg += "\n\nDid you mean this?\n\t" + strings.Join(s, "\n\t")
		}
		return &flagError{err: fmt.Errorf("%s\nSee '%s --help'.", msg, cmd.CommandPath())}
	}
}

// lineWithoutDashes is command sub's line with words, given after a `--` that made them all
// arguments: each of sub's flags (and its value) as a flag, the rest as its arguments, after a
// `--` of their own where one starts with "-" (a snapshot ID may). Printed back as given, the
// `--` was kept, and the line advised was the one refused
// (TestAdviceOfRefusalsAndKeptClaimsRunsAsPrintedAndKeepsTheLine).
func lineWithoutDashes(sub *cobra.Command, words []string) string {
	var args, flags []string
	for i := 0; i < len(words); i++ {
		w := words[i]
		if w == "--" {
			// The user's own: all after it are arguments, as they wrote them.
			args = append(args, words[i+1:]...)
			break
		}
		f, value, inWord := flagOf(sub, w)
		switch {
		case f == nil:
			args = append(args, w)
		case inWord || f.NoOptDefVal != "" || i+1 == len(words):
			if inWord {
				flags = append(flags, flagWord(f, value))
			} else {
				flags = append(flags, shellquote.Arg(w))
			}
		default:
			flags = append(flags, flagWord(f, words[i+1]))
			i++
		}
	}
	return shellquote.CommandFlags(sub.CommandPath(), args, flags...)
}

// flagOf is the flag of command c that word w names (`--name`, `--name=value`, `-n`, `-nVALUE`),
// nil when it names none; value is the value the word carries itself (inWord).
func flagOf(c *cobra.Command, w string) (f *pflag.Flag, value string, inWord bool) {
	switch {
	case strings.HasPrefix(w, "--") && len(w) > 2:
		name, value, inWord := strings.Cut(w[2:], "=")
		return c.Flag(name), value, inWord
	case strings.HasPrefix(w, "-") && len(w) >= 2:
		f := c.Flags().ShorthandLookup(w[1:2])
		if f == nil {
			f = c.InheritedFlags().ShorthandLookup(w[1:2])
		}
		if f == nil || len(w) == 2 {
			return f, "", false
		}
		if f.NoOptDefVal != "" {
			return nil, "", false // a cluster of short flags: not sorted
		}
		return f, strings.TrimPrefix(w[2:], "="), true
	}
	return nil, "", false
}

// flagWord is flag f given value, as a command line's word: a secret's value never (--secret
// KEY=VALUE is advised as --secret-file KEY=-, read without echo: an advice printed it whole on
// stderr, TestArgumentAdvisedAsAFlagShowsNoSecretGiven), a boolean as --name or --name=false.
func flagWord(f *pflag.Flag, value string) string {
	switch {
	case f.Name == "secret":
		key, _, _ := strings.Cut(value, "=")
		return shellquote.Flag("--secret-file", key+"=-")
	case f.NoOptDefVal != "" && value == f.NoOptDefVal:
		return "--" + f.Name
	case f.NoOptDefVal != "":
		return "--" + f.Name + "=" + shellquote.Arg(value)
	}
	return shellquote.Flag("--"+f.Name, value)
}

// changedFlags are the flags given to command c, as words of a command line (booleans bare,
// repeated flags once a value), but skip's.
func changedFlags(c *cobra.Command, skip string) []string {
	var out []string
	local := c.LocalFlags() // its own flags: what it was given is in c.Flags()
	c.Flags().Visit(func(f *pflag.Flag) {
		if f.Name == skip || local.Lookup(f.Name) == nil {
			return
		}
		if v, ok := f.Value.(pflag.SliceValue); ok {
			for _, e := range v.GetSlice() {
				out = append(out, flagWord(f, e))
			}
			return
		}
		out = append(out, flagWord(f, f.Value.String()))
	})
	return out
}

// strictHelpTopics makes `volctl help TOPIC...` refuse a topic that names no command: exit 2,
// naming it, with suggestions, as rejectUnknownSubcommands refuses `volctl TOPIC`. Cobra's
// help command finds its topic as a command line is found, and every group takes any argument
// (so that it can refuse it when it runs): a mistyped topic (`volctl help statsu`, `volctl
// help volume clam`) or one with a word past a command (`help volume claim extra`) got the
// help of the command before it and exit 0, nothing said of the word it could not find.
func strictHelpTopics(root *cobra.Command) {
	root.InitDefaultHelpCmd() // now, not at Execute: it is the command replaced here
	var help *cobra.Command
	for _, c := range root.Commands() {
		if c.Name() == "help" {
			help = c
		}
	}
	if help == nil || help.Run == nil {
		panic("cli: cobra's help command changed; strictHelpTopics must follow it") // caught by every test that builds the root
	}
	show := help.Run
	help.Run = nil
	help.RunE = func(c *cobra.Command, args []string) error {
		found, rest, err := c.Root().Find(args)
		if err == nil && len(rest) == 0 {
			show(c, args)
			return nil
		}
		msg := fmt.Sprintf("unknown help topic %q", strings.Join(args, " "))
		if found != nil && len(rest) > 0 {
			msg += fmt.Sprintf(": no command %q in %s", rest[0], found.CommandPath())
			if found.SuggestionsMinimumDistance <= 0 {
				found.SuggestionsMinimumDistance = 2
			}
			if s := found.SuggestionsFor(rest[0]); len(s) > 0 {
				msg += "\n\nDid you mean this?\n\t" + strings.Join(s, "\n\t")
			}
		}
		return &flagError{err: fmt.Errorf("%s\nSee '%s --help'.", msg, c.Root().CommandPath())}
	}
}

// parentCmd builds a command that only groups others (volume, plugin, volume snapshot, ...):
// it runs nothing of its own, and an argument that names none of subs is refused
// (rejectUnknownSubcommands). long may be empty.
func parentCmd(use, short, long string, subs ...*cobra.Command) *cobra.Command {
	cmd := &cobra.Command{Use: use, Short: short, Long: long}
	cmd.AddCommand(subs...)
	return cmd
}

// exactArgs and friends wrap cobra's argument checks so their errors exit 2 like flag errors.
// An empty argument is refused too: no ID or file is empty, and `volctl plugin status "$P"`
// with P unset must not quietly become `volctl plugin status`, a check that always passes.
func argsChecker(check cobra.PositionalArgs) cobra.PositionalArgs {
	return func(cmd *cobra.Command, args []string) error {
		err := check(cmd, args)
		for i, a := range args {
			if err == nil && a == "" {
				err = fmt.Errorf("argument %d is empty", i+1)
			}
		}
		if err != nil {
			// The usage line names the arguments the count is of (VOLUME, FILE, PLUGIN
			// SNAPSHOT_ID|NAME): cobra's count alone named none (TestWrongArgumentCountShowsTheUsage).
			return &flagError{err: fmt.Errorf("%w\nUsage: %s\nSee '%s --help'.", err, cmd.UseLine(), cmd.CommandPath())}
		}
		return nil
	}
}

func exactArgs(n int) cobra.PositionalArgs        { return argsChecker(cobra.ExactArgs(n)) }
func maximumArgs(n int) cobra.PositionalArgs      { return argsChecker(cobra.MaximumNArgs(n)) }
func minimumArgs(n int) cobra.PositionalArgs      { return argsChecker(cobra.MinimumNArgs(n)) }
func rangeArgs(min, max int) cobra.PositionalArgs { return argsChecker(cobra.RangeArgs(min, max)) }

// lastAsFlag is exactArgs(n) for a command that takes, as a flag, what users write as one more
// argument (as other commands take it): given n+1 arguments, its refusal shows the command
// with the last one as that flag, quoted for the shell (`volume claim db web-0`: "takes the
// alloc as a flag: volctl volume claim db --alloc web-0"); before, only "accepts 1 arg(s),
// received 2". others are the other flags the argument may have meant, named after it. Once the
// flag is given too, the extra argument is not it: the plain refusal.
func lastAsFlag(n int, flag string, others ...string) cobra.PositionalArgs {
	return func(c *cobra.Command, args []string) error {
		// Nor where the line advised would be refused in turn: an empty argument (refused as
		// such, first), or a last one the flag does not take (empty, or starting with "-");
		// `volume claim db ""` advised `--alloc ''` (TestArgumentAdvisedAsAFlagIsOneTheFlagTakes).
		if len(args) != n+1 || c.Flags().Changed(strings.TrimPrefix(flag, "--")) || slices.Contains(args, "") || strings.HasPrefix(args[n], "-") {
			return exactArgs(n)(c, args)
		}
		what := "the " + strings.TrimPrefix(flag, "--")
		also := ""
		if len(others) > 0 {
			what = "what to show"
			also = " (or " + strings.Join(others, ", ") + ")"
		}
		// With the other flags given: `volume claim db web-0 --read-only` advised a write claim
		// (TestAdviceOfRefusalsAndKeptClaimsRunsAsPrintedAndKeepsTheLine).
		flags := append([]string{shellquote.Flag(flag, args[n])}, changedFlags(c, strings.TrimPrefix(flag, "--"))...)
		return &flagError{err: fmt.Errorf("%s takes %s as a flag: `%s`%s\nSee '%s --help'.", c.CommandPath(), what,
			shellquote.CommandFlags(c.CommandPath(), args[:n], flags...), also, c.CommandPath())}
	}
}

// withListAliases lets a status command that lists when given no argument be called as list
// or ls too (volume list, plugin ls), as gh, kubectl and docker users type first. Under those
// names it takes no argument: `volume list db` is more likely a mistake than a request for db.
// kubectl's get and describe, docker's inspect, show and info are answered with "Did you mean
// this? status".
func withListAliases(cmd *cobra.Command) *cobra.Command {
	cmd.Aliases = append(cmd.Aliases, "list", "ls")
	cmd.SuggestFor = append(cmd.SuggestFor, "get", "describe", "inspect", "show", "info")
	check := cmd.Args
	cmd.Args = func(c *cobra.Command, args []string) error {
		if name := c.CalledAs(); (name == "list" || name == "ls") && len(args) > 0 {
			// The ID quoted as a shell reads it: "a b" was two arguments, refused
			// (TestAdvicePrintedRunsAsPrinted).
			return &flagError{err: fmt.Errorf("%s %s lists them all and takes no argument; to show one: `%s`\nSee '%s --help'.",
				c.Parent().CommandPath(), name, shellquote.Command(c.Parent().CommandPath()+" status", args[0]), c.CommandPath())}
		}
		if check == nil {
			return nil
		}
		return check(c, args)
	}
	return cmd
}

// runOpts is the RunE of a command whose inputs are an options struct: bind stores the
// arguments (and what else the command reads at run time) in opts, then runF gets opts when it
// is set (tests capture the parsed options there) and run does the work otherwise.
func runOpts[O any](opts *O, bind func(args []string), runF func(*O) error, run func(context.Context, *O) error) func(*cobra.Command, []string) error {
	return func(cmd *cobra.Command, args []string) error {
		if bind != nil {
			bind(args)
		}
		if runF != nil {
			return runF(opts)
		}
		if err := missingRequired(cmd); err != nil {
			return err
		}
		return run(cmd.Context(), opts)
	}
}

// requiredAnnotation marks a flag a command line must give, with the usage error for one that
// does not (requiredFlag).
const requiredAnnotation = "volctl_required"

// requiredFlag marks cmd's flag name as one its command line must give, refused with the usage
// error why without it. runOpts checks it before the command runs, and the docs test through
// the same check (parseAdvised): a doc quoting `volctl volume expand ID` without --size passed
// a parse of its words alone (TestDocsParseRunsTheCommandsOwnChecks). The run function keeps
// its own check for options built without flags.
func requiredFlag(cmd *cobra.Command, name, why string) {
	if err := cmd.Flags().SetAnnotation(name, requiredAnnotation, []string{why}); err != nil {
		panic(err) // a flag not defined: a programming error
	}
}

// missingRequired returns the usage error of the first flag requiredFlag marks that cmd's
// command line does not give.
func missingRequired(cmd *cobra.Command) error {
	var err error
	cmd.Flags().VisitAll(func(fl *pflag.Flag) {
		if why, ok := fl.Annotations[requiredAnnotation]; ok && !fl.Changed && err == nil {
			err = usageError("%s", why[0])
		}
	})
	return err
}

// firstArg is a bind for runOpts that stores the first argument, when there is one, in dst
// (a command that needs it says so in its Args).
func firstArg(dst *string) func([]string) {
	return func(args []string) {
		if len(args) > 0 {
			*dst = args[0]
		}
	}
}

// logsNothing says whether cmd is one that writes no log, whatever VOLCTL_LOG says: cobra's
// completion requests, `help`, and `completion` and its scripts.
func logsNothing(cmd *cobra.Command) bool {
	if cmd.Name() == cobra.ShellCompRequestCmd || cmd.Name() == cobra.ShellCompNoDescRequestCmd {
		return true
	}
	for c := cmd; c != nil && c.HasParent(); c = c.Parent() {
		if !c.Parent().HasParent() && (c.Name() == "help" || c.Name() == "completion") {
			return true
		}
	}
	return false
}
