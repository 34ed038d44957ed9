package cli

import (
	"context"
	"fmt"
	"log/slog"
	"os"
	"path/filepath"
	"slices"
	"sort"
	"strings"
	"time"

	"github.com/spf13/cobra"

	"github.com/volctl/volctl/internal/display"
	"github.com/volctl/volctl/internal/engine"
	"github.com/volctl/volctl/internal/spec"
	"github.com/volctl/volctl/internal/store"
)

// completionTimeout bounds what one completion may spend reading the state: a shell waiting on
// a <Tab> must not hang on a state dir another volctl holds locked.
const completionTimeout = 2 * time.Second

// fileArgs are the commands whose arguments are files: the shell's own file completion stays.
var fileArgs = map[string]bool{
	"volctl validate":        true,
	"volctl register":        true,
	"volctl create":          true,
	"volctl volume register": true,
	"volctl volume create":   true,
	"volctl plugin register": true,
	"volctl group run":       true,
	"volctl init":            true,
}

// registerCompletions gives the commands dynamic shell completion: volume, plugin, group,
// alloc and snapshot IDs read from the state dir, the access and attachment modes, --for's
// verbs. Every other command that takes no file is told not to offer file names.
func registerCompletions(root *cobra.Command, f *Factory) {
	args := map[string]cobra.CompletionFunc{
		"volctl status":                     f.completeArgs(completeVolumes),
		"volctl volume status":              f.completeArgs(completeVolumes),
		"volctl volume claim":               f.completeArgs(completeVolumes),
		"volctl volume release":             f.completeArgs(completeVolumes),
		"volctl volume delete":              f.completeArgs(completeVolumes),
		"volctl volume deregister":          f.completeArgs(completeVolumes),
		"volctl volume detach":              f.completeArgs(completeVolumes),
		"volctl volume expand":              f.completeArgs(completeVolumes),
		"volctl volume snapshot create":     f.completeArgs(completeVolumes),
		"volctl volume snapshot delete":     f.completeArgs(completeSnapshotPlugins, completeSnapshots),
		"volctl volume snapshot deregister": f.completeArgs(completeSnapshotPlugins, completeSnapshots),
		"volctl plugin status":              f.completeArgs(completePlugins),
		"volctl plugin deregister":          f.completeArgs(completePlugins),
		"volctl group status":               f.completeArgs(completeGroups),
		"volctl group stop":                 f.completeArgs(completeGroups),
		"volctl nomad register":             f.completeEach(completeVolumes),
		"volctl nomad release":              f.completeEach(completeVolumes),
		"volctl nomad status":               f.completeEach(completeVolumes),
		"volctl export nomad":               f.completeEach(completeVolumes),
	}
	flags := map[string]map[string]cobra.CompletionFunc{
		"volctl volume claim": {
			"alloc":           f.completeWith(completeAllocs),
			"access-mode":     fixedCompletions(modeNames(spec.AccessModes)...),
			"attachment-mode": fixedCompletions(modeNames(spec.AttachmentModes)...),
		},
		"volctl volume release":       {"alloc": f.completeWith(completeAllocs)},
		"volctl volume snapshot list": {"plugin": f.completeWith(completePlugins)},
		"volctl validate":             {"for": fixedCompletions(string(spec.VerbRegister), string(spec.VerbCreate))},
		"volctl plugin register": {
			"type": fixedCompletions(string(spec.PluginMonolith), string(spec.PluginController), string(spec.PluginNode)),
		},
		"volctl events": {
			"volume": f.completeWith(completeVolumes),
			"plugin": f.completeWith(completePlugins),
			"alloc":  f.completeWith(completeAllocs),
			"kind":   f.completeWith(completeEventKinds),
		},
		"volctl export nomad": {"group": f.completeWith(completeGroups)},
		"volctl agent":        {"log-format": fixedCompletions("text", "json")},
	}
	var walk func(c *cobra.Command)
	walk = func(c *cobra.Command) {
		for _, sub := range c.Commands() {
			walk(sub)
		}
		path := c.CommandPath()
		if fn, ok := args[path]; ok {
			c.ValidArgsFunction = fn
		} else if c.ValidArgsFunction == nil && len(c.ValidArgs) == 0 && !fileArgs[path] && !c.HasSubCommands() {
			c.ValidArgsFunction = cobra.NoFileCompletions
		}
		for name, fn := range flags[path] {
			_ = c.RegisterFlagCompletionFunc(name, fn)
		}
	}
	walk(root)
}

// idSource lists candidates from the engine; args are the arguments before the one completed.
type idSource func(ctx context.Context, e *engine.Engine, args []string) []string

// completeArgs completes the i-th positional argument from the i-th source, and nothing past
// them, nor anything after a list alias (withListAliases: `volume ls` takes no argument, and
// offered the IDs `volume status` takes, a line the command then refused,
// TestListAliasesCompleteNoArgument).
func (f *Factory) completeArgs(sources ...idSource) cobra.CompletionFunc {
	return func(cmd *cobra.Command, args []string, toComplete string) ([]cobra.Completion, cobra.ShellCompDirective) {
		if len(args) >= len(sources) {
			return nil, cobra.ShellCompDirectiveNoFileComp
		}
		if as := f.completedAs(cmd); as == "ls" || as == "list" {
			return nil, cobra.ShellCompDirectiveNoFileComp
		}
		return f.complete(cmd, args, toComplete, sources[len(args)])
	}
}

// completeEach completes every positional argument (VOLUME...) from src, leaving out the ones
// given already (TestVolumeArgumentsOfNomadAndExportComplete; before, nothing).
func (f *Factory) completeEach(src idSource) cobra.CompletionFunc {
	return func(cmd *cobra.Command, args []string, toComplete string) ([]cobra.Completion, cobra.ShellCompDirective) {
		return f.complete(cmd, args, toComplete, func(ctx context.Context, e *engine.Engine, args []string) []string {
			return slices.DeleteFunc(src(ctx, e, args), func(c string) bool {
				id, _, _ := strings.Cut(c, "\t")
				return slices.Contains(args, id)
			})
		})
	}
}

// completedAs is the name or alias by which the completion request (f.args: cobra's
// __complete or __completeNoDesc, the words, the one being completed last) names cmd, "" when it cannot be told:
// cobra's Find knows it, and keeps it from the command until the command runs (CalledAs).
// The words are walked from the root as Find walks them, a flag and anything naming no
// subcommand (an argument, a flag's value) passed over.
func (f *Factory) completedAs(cmd *cobra.Command) string {
	if len(f.args) < 2 || f.args[0] != cobra.ShellCompRequestCmd && f.args[0] != cobra.ShellCompNoDescRequestCmd {
		return "" // not a completion request: scripts written with --no-descriptions send the second
	}
	node, as := cmd.Root(), ""
	for _, w := range f.args[1 : len(f.args)-1] {
		if strings.HasPrefix(w, "-") {
			continue
		}
		for _, sub := range node.Commands() {
			if sub.Name() == w || sub.HasAlias(w) {
				node, as = sub, w
				break
			}
		}
	}
	if node != cmd {
		return ""
	}
	return as
}

// completeWith completes a flag's value from a source.
func (f *Factory) completeWith(src idSource) cobra.CompletionFunc {
	return func(cmd *cobra.Command, args []string, toComplete string) ([]cobra.Completion, cobra.ShellCompDirective) {
		return f.complete(cmd, args, toComplete, src)
	}
}

// complete reads the candidates through an engine opened on the state dir only if it holds a
// database already: completing never creates a state dir, and never says anything. Any failure
// (no state yet, another user's, a newer schema) completes nothing.
func (f *Factory) complete(cmd *cobra.Command, args []string, toComplete string, src idSource) ([]cobra.Completion, cobra.ShellCompDirective) {
	bound := completionTimeout
	if f.completionTimeout > 0 {
		bound = f.completionTimeout
	}
	ctx, cancel := context.WithTimeout(context.Background(), bound)
	defer cancel()
	e := f.existingEngine(ctx)
	if e == nil {
		return nil, cobra.ShellCompDirectiveNoFileComp
	}
	// A candidate may be a plugin's (a snapshot ID), and a plugin may have echoed a secret
	// into it: candidates are output like any other, scrubbed as status scrubs what it prints
	// (docs/architecture.md, State: Secrets). One the scrub changed cannot be typed as
	// offered, and is left out; with the state unreadable, nothing is offered.
	redact, err := e.Redactor(ctx)
	if err != nil {
		return nil, cobra.ShellCompDirectiveNoFileComp
	}
	// Shells show the candidates (zsh's and fish's menus: the descriptions too) and put the
	// value in the command line. A description is shown as a table cell is (display.Escape: a
	// spec's name may hold \r, a plugin's strings anything); a value that escaping would change
	// (a plugin's snapshot ID with an escape sequence in it) is left out: it cannot be offered
	// as it is to a terminal, nor typed as it would be shown.
	var out []cobra.Completion
	for _, c := range src(ctx, e, args) {
		id, _, _ := strings.Cut(c, "\t")
		// Nor a value the command line would read as a flag (a plugin's snapshot ID "-rf"):
		// offered, the command was refused, "unknown shorthand flag"
		// (TestCompletionOffersNoSnapshotIDTheCommandTakesForAFlag).
		if id == "" || !strings.HasPrefix(id, toComplete) || display.Escape(id) != id || strings.HasPrefix(id, "-") {
			continue
		}
		if c = redact(c); !strings.HasPrefix(c, id) {
			continue
		}
		if _, desc, ok := strings.Cut(c, "\t"); ok {
			c = id + "\t" + display.Escape(desc)
		}
		out = append(out, c)
	}
	return out, cobra.ShellCompDirectiveNoFileComp
}

// existingEngine opens the engine on the state dir only if it holds a database already, quietly;
// nil when there is none or it cannot be opened. Completion reads its candidates through it,
// and plugin probe the secrets to keep out of what a plugin says.
func (f *Factory) existingEngine(ctx context.Context) *engine.Engine {
	if f.engine != nil {
		return f.engine
	}
	dir, ok := f.hasDatabase()
	if !ok {
		return nil
	}
	// Opened for reading, as status is: a <Tab> behind another volctl's migration reads the
	// state as last committed at once, where opened to write it waited out its bound and offered
	// nothing (TestCompletionReadsWhileAnotherVolctlMigrates).
	e, err := engine.Open(ctx, engine.Config{StateDir: dir, Logger: slog.New(slog.DiscardHandler), Reading: true})
	if err != nil {
		return nil
	}
	f.engine = e // closed by main's Factory.Close, as any command's
	f.unredact = redactCrashes(e)
	return e
}

// hasDatabase returns the state dir and whether it holds a database: one without records nothing.
func (f *Factory) hasDatabase() (string, bool) {
	dir, err := f.StateDir()
	if err != nil {
		return "", false
	}
	fi, err := os.Stat(filepath.Join(dir, store.FileName))
	return dir, err == nil && fi.Mode().IsRegular()
}

// storedEngine is Engine when the state dir holds a database, and nil, without creating the
// state dir, when it holds none: a look before a question (confirmedOnVolume).
func (f *Factory) storedEngine(ctx context.Context) (*engine.Engine, error) {
	if f.engine != nil {
		return f.engine, nil
	}
	if _, ok := f.hasDatabase(); !ok {
		return nil, nil
	}
	return f.Engine(ctx)
}

// completionLine is a completion's line, "VALUE\tdescription", or "" (no candidate: complete
// skips it) when value holds a tab, newline or carriage return: the shell and complete cut the
// line at its first tab and its first newline, and would offer what comes before, a value no
// record has. A plugin's snapshot ID may hold one (spec.ControlIn takes them); before, "snap\tX"
// was offered as "snap", perhaps another snapshot's ID, in front of snapshot delete
// (TestCompletionOffersNoValueCutAtItsTab).
func completionLine(value, desc string) string {
	if strings.ContainsAny(value, "\t\n\r") {
		return ""
	}
	return value + "\t" + desc
}

// completions is one completion line ("VALUE\tdescription", completionLine) per item.
func completions[T any](items []T, line func(T) string) []string {
	out := make([]string, 0, len(items))
	for _, it := range items {
		out = append(out, line(it))
	}
	return out
}

func completeVolumes(ctx context.Context, e *engine.Engine, _ []string) []string {
	vols, _ := e.Volumes(ctx)
	return completions(vols, func(v engine.VolumeSummary) string {
		return completionLine(v.ID, fmt.Sprintf("%s, plugin %s", v.Name, v.PluginID))
	})
}

func completePlugins(ctx context.Context, e *engine.Engine, _ []string) []string {
	plugins, _ := e.Plugins(ctx)
	return completions(plugins, func(p engine.PluginInfo) string { return completionLine(p.ID, string(p.Type)+" plugin") })
}

func completeGroups(ctx context.Context, e *engine.Engine, _ []string) []string {
	groups, _ := e.Groups(ctx, "")
	return completions(groups, func(g engine.GroupInfo) string {
		return completionLine(g.Name, fmt.Sprintf("%s, count %d", g.State, g.Count))
	})
}

// completeAllocs offers the allocs holding live claims: on the volume given as the first
// argument when there is one (release, and a second claim of a shared volume), else on any.
func completeAllocs(ctx context.Context, e *engine.Engine, args []string) []string {
	claims, _ := e.Claims(ctx)
	seen := map[string]bool{}
	var out []string
	for _, c := range claims {
		if len(args) > 0 && c.VolumeID != args[0] || seen[c.Alloc] {
			continue
		}
		seen[c.Alloc] = true
		out = append(out, completionLine(c.Alloc, fmt.Sprintf("claims %s (%s)", c.VolumeID, c.State)))
	}
	sort.Strings(out)
	return out
}

// completeSnapshotPlugins offers the registered plugins and the plugins deregistered with
// --force whose snapshots stay recorded, and deletable.
func completeSnapshotPlugins(ctx context.Context, e *engine.Engine, args []string) []string {
	out := completePlugins(ctx, e, args)
	registered := map[string]bool{}
	for _, c := range out {
		id, _, _ := strings.Cut(c, "\t")
		registered[id] = true
	}
	snaps, _ := e.RecordedSnapshots(ctx, "")
	counts := map[string]int{}
	var gone []string
	for _, s := range snaps {
		if !registered[s.PluginID] && counts[s.PluginID] == 0 {
			gone = append(gone, s.PluginID)
		}
		counts[s.PluginID]++
	}
	for _, id := range gone {
		out = append(out, completionLine(id, fmt.Sprintf("deregistered, %d snapshot(s) recorded", counts[id])))
	}
	return out
}

// completeEventKinds offers the kinds of the events in the log.
func completeEventKinds(ctx context.Context, e *engine.Engine, _ []string) []string {
	events, _ := e.Events(ctx, 0, engine.EventFilter{})
	seen := map[string]bool{}
	var out []string
	for _, ev := range events {
		if !seen[ev.Kind] {
			seen[ev.Kind] = true
			out = append(out, ev.Kind)
		}
	}
	sort.Strings(out)
	return out
}

// completeSnapshots offers the recorded snapshots of the plugin given as the first argument.
func completeSnapshots(ctx context.Context, e *engine.Engine, args []string) []string {
	snaps, _ := e.RecordedSnapshots(ctx, args[0])
	out := make([]string, 0, len(snaps))
	for _, s := range snaps {
		desc := "snapshot " + s.Name
		if s.SourceVolumeID != "" {
			desc += " of " + s.SourceVolumeID
		}
		out = append(out, completionLine(s.ID, desc))
	}
	return out
}

// fixedCompletions completes from a fixed list, the values that start with what is typed.
func fixedCompletions(values ...string) cobra.CompletionFunc {
	return func(_ *cobra.Command, _ []string, toComplete string) ([]cobra.Completion, cobra.ShellCompDirective) {
		var out []cobra.Completion
		for _, v := range values {
			if strings.HasPrefix(v, toComplete) {
				out = append(out, v)
			}
		}
		return out, cobra.ShellCompDirectiveNoFileComp
	}
}

func modeNames[T ~string](modes []T) []string {
	out := make([]string, len(modes))
	for i, m := range modes {
		out[i] = string(m)
	}
	return out
}
