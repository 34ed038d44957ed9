package cli

import (
	"bufio"
	"context"
	"fmt"
	"io"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/spf13/cobra"

	"github.com/volctl/volctl/internal/engine"
	"github.com/volctl/volctl/internal/iostreams"
	"github.com/volctl/volctl/internal/shellquote"
	"github.com/volctl/volctl/internal/spec"
)

// GroupRunOptions are the inputs of `volctl group run`.
type GroupRunOptions struct {
	IO       *iostreams.IOStreams
	Engine   func(context.Context) (*engine.Engine, error)
	ReadFile func(string) ([]byte, error)

	File     string // "-" is standard input
	Exporter exportFlags
}

func newCmdGroupRun(f *Factory, runF func(*GroupRunOptions) error) *cobra.Command {
	opts := &GroupRunOptions{IO: f.IO, Engine: f.Engine}
	cmd := &cobra.Command{
		Use:   "run FILE | -",
		Short: "Run a group: claim every volume of every alloc",
		Long: `Run a group spec: record the group and give each of its count allocs (NAME[0], NAME[1], ...)
all of its volumes or none. A volume with per_alloc = true is claimed as SOURCE[index]. When
one claim of an alloc fails, the claims that alloc already got are released again.

Running a group again is idempotent: allocs that hold their claims keep them, and a smaller
count releases the allocs past it, naming the claims it released (cut short after recording the
new count and before releasing them, volctl reconcile and the agent release them). An alloc holding a claim in another mode, with other
mount_options or other volume_mount blocks than the spec's now, or on a volume the spec no
longer names for it (a volume block removed, its source or per_alloc changed), is not changed
under it: that alloc fails (exit 4) and keeps its claims; group stop, then run, applies the new
spec. So
does one holding a claim made outside the group (volume claim --alloc NAME[0]): volume
release frees it. A
volume_mount of a held claim found unmounted is bound again. A volume_mount destination that
holds files (a directory with anything but empty directories in it, a file that is not empty, a
device) is not bound over, which would hide them: the alloc fails (exit 4) before anything is
claimed, naming them, as it does for a destination reached through a symlink. A spec that binds two of its allocs at one
path, or one inside another's, is refused before anything is claimed (exit 2), naming both. A second run of the group started
while one runs waits for it (saying which process it waits for), then runs on what it left; a
group stop from another volctl while it runs overtakes it (the stop releases what the run
claimed), and the run reports the group stopped, no alloc served, exit 4. Prints each alloc's volumes and target paths (a
failed alloc's: the claims it still holds, then its failure), and where each is bind-mounted
(MOUNTED AT) when the group has volume_mount blocks.

Exit status: 0 when every alloc got its volumes; otherwise the failure's code, as volume claim
exits (4 for a claim refused, 2 for a spec or request that can never work, else 1; 4 before 2
before 1 when allocs fail differently), with each failed alloc named.`,
		Example: `  volctl group run web.hcl
  volctl group run web.hcl --json`,
		Args: exactArgs(1),
		RunE: runOpts(opts, firstArg(&opts.File), runF, groupRunRun),
	}
	addActingExportFlags[engine.GroupInfo](cmd, &opts.Exporter, opts.IO)
	return cmd
}

func groupRunRun(ctx context.Context, opts *GroupRunOptions) error {
	sources, err := readSpecSources(ctx, opts.IO, opts.ReadFile, []string{opts.File})
	if err != nil {
		return fmt.Errorf("group run: %w", err)
	}
	parser := spec.NewParser()
	g, diags := parser.ParseGroup(sources[0].Name, sources[0].Src)
	if g != nil {
		// A readable file whose volumes' mount flags hold a password, warned of as validate
		// warns of it.
		diags = append(diags, exposedSecrets(sources[0], heldSecrets(nil, nil, g))...)
	}
	if err := writeSpecDiagnostics(opts.IO, parser, diags); err != nil {
		return err
	}
	if diags.HasErrors() {
		return invalidSpecs("group run", "run", 1, 1)
	}
	e, err := opts.Engine(ctx)
	if err != nil {
		return err
	}
	pctx, done := startProgress(ctx, opts.IO, opts.Exporter.Enabled())
	info, runErr := e.RunGroup(pctx, *g)
	done()
	if runErr != nil && info.Name == "" {
		// Failed before it ran any alloc (its lock not got, its record not written): there
		// is no group to print. Before, --json printed an empty one, "allocs": null, beside
		// exit 1 (TestGroupRunFailingBeforeAnyAllocPrintsNoJSON).
		return runErr
	}
	if err := redactOutput(ctx, e, nil, &info); err != nil {
		return fmt.Errorf("group run: %w", err)
	}
	out := bufio.NewWriter(opts.IO.Out)
	if opts.Exporter.Enabled() {
		err = opts.Exporter.Write(ctx, out, info)
	} else {
		err = writeGroupRun(out, info)
	}
	flush(out, &err)
	// The table too: unprinted (a reader gone, a full disk), it failed quietly, exit 1 with
	// nothing said of the claims the run made (TestActingCommandsSayWhatTheyDidWhenTheirResultIsLost).
	err = afterDone(err, "group %q run: %s", info.Name, runDid(info))
	if err != nil {
		// With the allocs that failed, the claims the others made, which stand, that the
		// result unprinted would have said (TestGroupRunThatFailsInPartWhoseResultIsLostSaysWhatItKept).
		return joinUnprinted(runErr, err)
	}
	return runErr
}

// writeGroupRun prints what each alloc got: one row per claim, a failed alloc's row says so
// (the error itself follows on stderr).
func writeGroupRun(out io.Writer, g engine.GroupInfo) error {
	fmt.Fprintf(out, "Group %q: %s\n", g.Name, allocsServed(g))
	binds := hasBinds(g)
	t := newTable(out, withBinds(binds, []string{"ALLOC", "VOLUME", "MODE"}, "MOUNTED AT", "TARGET")...)
	for _, a := range g.Allocs {
		// A failed alloc's claims are those it still holds (from an earlier run, or this one's
		// when interrupted): listed, then its failure.
		for _, c := range a.Claims {
			t.row(withBinds(binds, []string{a.Name, c.VolumeID, c.Mode}, bindsCell(c.Binds), c.TargetPath)...)
		}
		if a.Error != "" {
			t.row(withBinds(binds, []string{a.Name, "", ""}, "", "failed (see the error)")...)
		}
	}
	if err := t.render(); err != nil || len(g.Released)+len(g.ReleasedMeanwhile) == 0 {
		return err
	}
	_, err := fmt.Fprintf(out, "Scaled %s\n", downTo(g))
	return err
}

// downTo says what a group run's scale-down released: "down to 1: released ...", and what
// another volctl released meanwhile of what it found to release.
func downTo(g engine.GroupInfo) string {
	return fmt.Sprintf("down to %d: %s", g.Count, releasedWords(g))
}

// releasedWords says what a group stop or scale-down released, and which claims it found to
// release and another volctl released while it waited for them
// (engine.GroupInfo.ReleasedMeanwhile): "released ...; another volctl released ... meanwhile";
// "" when neither.
func releasedWords(g engine.GroupInfo) string {
	var parts []string
	if len(g.Released) > 0 {
		parts = append(parts, "released "+releasedClaims(g.Released))
	}
	if len(g.ReleasedMeanwhile) > 0 {
		parts = append(parts, "another volctl released "+releasedClaims(g.ReleasedMeanwhile)+" meanwhile")
	}
	return strings.Join(parts, "; ")
}

// runDid is what a group run did, for the error of one whose result went unprinted: how many
// allocs have their volumes and, after a scale-down, the claims it released.
func runDid(g engine.GroupInfo) string {
	if len(g.Released)+len(g.ReleasedMeanwhile) == 0 {
		return allocsServed(g)
	}
	return allocsServed(g) + "; scaled " + downTo(g)
}

// releasedClaims names the claims a group run's scale-down or a group stop released, the first
// ten of them when there are more (--json lists them all): "data[1]" for alloc "web[1]", ...
func releasedClaims(rs []engine.ReleasedClaim) string {
	return firstTen(rs, func(r engine.ReleasedClaim) string { return fmt.Sprintf("%q for alloc %q", r.VolumeID, r.Alloc) })
}

// firstTen joins what show says of each item, the first ten of them when there are more, and
// how many more (--json lists them all).
func firstTen[T any](items []T, show func(T) string) string {
	const most = 10
	parts := make([]string, 0, min(len(items), most+1))
	for _, it := range items[:min(len(items), most)] {
		parts = append(parts, show(it))
	}
	if len(items) > most {
		parts = append(parts, fmt.Sprintf("and %d more (--json lists them all)", len(items)-most))
	}
	return strings.Join(parts, ", ")
}

// allocsServed says how many of the allocs a group run got their volumes, and how many of the
// others still hold claims (an earlier run's, which a refusal leaves standing, or this run's,
// interrupted): "2 of 3 allocs have their volumes; the 1 that failed still holds the claims
// shown".
func allocsServed(g engine.GroupInfo) string {
	ok, holding := 0, 0
	for _, a := range g.Allocs {
		switch {
		case a.Error == "":
			ok++
		case len(a.Claims) > 0:
			holding++
		}
	}
	// Counted of the group's count: a run interrupted returns the allocs it got to, and counted
	// of those, "1 of 2 allocs" of a group of 3 read as a group of two
	// (TestInterruptedGroupRunCountsTheAllocsOfTheGroup).
	s := fmt.Sprintf("%d of %d allocs have their volumes", ok, max(g.Count, len(g.Allocs)))
	hold := "hold"
	if holding == 1 {
		hold = "holds"
	}
	switch failed := len(g.Allocs) - ok; {
	case holding == 0:
	case holding == failed:
		s += fmt.Sprintf("; the %d that failed still %s the claims shown", failed, hold)
	default:
		s += fmt.Sprintf("; %d of the %d that failed still %s the claims shown", holding, failed, hold)
	}
	if notRun := g.Count - len(g.Allocs); notRun > 0 {
		s += fmt.Sprintf("; %d not run", notRun)
	}
	return s
}

// hasBinds reports whether any claim of the group is bind-mounted somewhere (volume_mount):
// only then do the tables give a column to where the volumes land.
func hasBinds(g engine.GroupInfo) bool {
	for _, a := range g.Allocs {
		for _, c := range a.Claims {
			if len(c.Binds) > 0 {
				return true
			}
		}
	}
	return false
}

// withBinds is cells, then the bind cell when the table has that column, then the target.
func withBinds(binds bool, cells []string, bind, target string) []string {
	if binds {
		cells = append(cells, bind)
	}
	return append(cells, target)
}

// bindsCell lists where a claim's target is bind-mounted: "/srv/www, /srv/cache (read-only)".
func bindsCell(binds []engine.Bind) string {
	parts := make([]string, len(binds))
	for i, b := range binds {
		parts[i] = b.Destination
		if b.ReadOnly {
			parts[i] += " (read-only)"
		}
		if b.Unbound {
			parts[i] += " (not bound: see the alloc's error)"
		}
	}
	return strings.Join(parts, ", ")
}

// GroupStatusOptions are the inputs of `volctl group status`.
type GroupStatusOptions struct {
	IO     *iostreams.IOStreams
	Engine func(context.Context) (*engine.Engine, error)
	Now    func() time.Time

	Name     string // one group; empty lists them all
	Exporter exportFlags
}

func newCmdGroupStatus(f *Factory, runF func(*GroupStatusOptions) error) *cobra.Command {
	opts := &GroupStatusOptions{IO: f.IO, Engine: f.Engine, Now: time.Now}
	cmd := &cobra.Command{
		Use:   "status [NAME]",
		Short: "Show groups and their allocs",
		Long: `Without a name, list the groups: state, count, how many allocs hold all their volumes, and
their live claims. With a name, show each alloc's claims with state and target path, and where
each is bind-mounted when the group has volume_mount blocks.`,
		Example: `  volctl group status
  volctl group status web
  volctl group status web -t '{{range .allocs}}{{.name}}{{"\n"}}{{end}}'`,
		Args: maximumArgs(1),
		RunE: runOpts(opts, idArg(&opts.Name), runF, groupStatusRun),
	}
	addExportFlags(cmd, &opts.Exporter, opts.IO)
	return cmd
}

func groupStatusRun(ctx context.Context, opts *GroupStatusOptions) (err error) {
	check := checkReadTemplate[[]engine.GroupInfo]
	if opts.Name != "" {
		check = checkReadTemplate[engine.GroupInfo]
	}
	if err := check(&opts.Exporter); err != nil {
		return err
	}
	e, err := opts.Engine(ctx)
	if err != nil {
		return err
	}
	groups, err := e.Groups(ctx, opts.Name)
	if err == nil {
		err = redactOutput(ctx, e, nil, &groups)
	}
	if err != nil {
		return fmt.Errorf("group status: %w", err)
	}
	out := bufio.NewWriter(opts.IO.Out)
	defer flush(out, &err)
	for i := range groups {
		if groups[i].Allocs == nil {
			groups[i].Allocs = []engine.AllocInfo{} // a stopped group: [] in JSON, not null
		}
	}
	if opts.Name != "" {
		if opts.Exporter.Enabled() {
			return opts.Exporter.Write(ctx, out, groups[0])
		}
		return writeGroupDetail(out, groups[0], opts.Now())
	}
	if opts.Exporter.Enabled() {
		if groups == nil {
			groups = []engine.GroupInfo{}
		}
		return opts.Exporter.Write(ctx, out, groups)
	}
	if len(groups) == 0 {
		fmt.Fprintln(opts.IO.ErrOut, "No groups (volctl group run).")
		return nil
	}
	t := newTable(out, "NAME", "STATE", "COUNT", "ALLOCS READY", "CLAIMS")
	for _, g := range groups {
		ready, claims := groupCounts(g)
		t.row(g.Name, g.State, strconv.Itoa(g.Count), fmt.Sprintf("%d/%d", ready, g.Count), strconv.Itoa(claims))
	}
	return t.render()
}

// groupCounts counts a group's allocs that hold every volume of the group (none Missing), each
// claim at rest, its target not covered and its binds bound, and its live claims. An alloc the group no longer has (GroupInfo.Lacks) is not ready,
// whatever it still holds.
func groupCounts(g engine.GroupInfo) (ready, claims int) {
	for _, a := range g.Allocs {
		claims += len(a.Claims)
		if g.Ready(a) {
			ready++
		}
	}
	return ready, claims
}

func writeGroupDetail(out io.Writer, g engine.GroupInfo, now time.Time) error {
	ready, claims := groupCounts(g)
	if err := keyValues(out,
		[2]string{"Name", g.Name},
		[2]string{"State", g.State},
		[2]string{"Count", strconv.Itoa(g.Count)},
		[2]string{"Allocs Ready", fmt.Sprintf("%d/%d", ready, g.Count)},
		[2]string{"Claims", strconv.Itoa(claims)},
	); err != nil {
		return err
	}
	fmt.Fprintln(out, "\nAllocs")
	binds := hasBinds(g)
	t := newTable(out, withBinds(binds, []string{"ALLOC", "VOLUME", "MODE", "STATE", "AGE"}, "MOUNTED AT", "TARGET")...)
	for _, a := range g.Allocs {
		if len(a.Claims) == 0 || a.Error != "" && (len(a.Missing) == 0 || a.Error != a.RunError) {
			// Holding nothing, or holding its claims with a volume_mount not mounted, a target
			// covered (beside a volume missing too: said on a row of its own, not as why that
			// one is missing): why.
			t.row(withBinds(binds, []string{a.Name, "", "", a.Error, ""}, "", "")...)
		}
		for _, c := range a.Claims {
			t.row(withBinds(binds, []string{a.Name, c.VolumeID, c.Mode, claimStateCell(c), age(now, c.CreatedAt)}, bindsCell(c.Binds), c.TargetPath)...)
		}
		for _, vol := range a.Missing {
			// The last run's error when it left one (a claim of a volume added to the spec
			// refused): "a run cut short" of a refusal sent the user to run again, refused the
			// same way (TestGroupStatusSaysWhyTheLastRunLeftAVolumeMissing).
			why := "missing (a run cut short: `volctl group run FILE` of its spec again)"
			if a.RunError != "" {
				why = "missing: " + a.RunError
			}
			t.row(withBinds(binds, []string{a.Name, vol, "", why, ""}, "", "")...)
		}
	}
	if err := t.render(); err != nil {
		return err
	}
	if g.State == engine.GroupFailed {
		// Claims a failed run left being released refuse the run again until reconcile
		// finishes them: said, where "run it again" alone was refused
		// (TestGroupStatusSaysWhyARunLeftAnAllocOnlyAClaimBeingReleased).
		first := ""
		if slices.ContainsFunc(g.Allocs, func(a engine.AllocInfo) bool {
			return slices.ContainsFunc(a.Claims, func(c engine.ClaimInfo) bool { return c.Releasing })
		}) {
			first = ", finish the release of the claims it left being released (`volctl reconcile`),"
		}
		fmt.Fprintf(out, "\nEvery alloc failed at the last `volctl group run` (each one's error above): nothing holds the group's volumes, and nothing will until it is run again; "+
			"fix the cause%s and run the group's spec again (volctl group run), or release it: `%s`\n", first, shellquote.Command("volctl group stop", g.Name))
	}
	// Claims of allocs the group no longer has: a stop or a scale-down killed before it released
	// them, or releasing them now. Nothing else says they are left, nor what releases them.
	var past []string
	for _, a := range g.Allocs {
		if len(a.Claims) > 0 && g.Lacks(a) {
			past = append(past, a.Name)
		}
	}
	if len(past) > 0 {
		why := fmt.Sprintf("past its count %d", g.Count)
		if g.State == "stopped" {
			why = "stopped"
		}
		// A release that failed says why, as its claim's record has it (a target covered: the
		// umount, then reconcile): "cut short, reconcile releases them" sent the user to a
		// reconcile that failed the same way
		// (TestGroupStatusOfAScaleDownRefusedByACoverDoesNotAdviseAReconcileThatReleasesNothing).
		var failed []string
		for _, a := range g.Allocs {
			if !slices.Contains(past, a.Name) {
				continue
			}
			for _, c := range a.Claims {
				if text := c.LastErrorText(); text != "" {
					failed = append(failed, fmt.Sprintf("%s's claim of %s: %s", a.Name, shownQ(c.VolumeID), escapeLines(text)))
				}
			}
		}
		if len(failed) > 0 {
			_, err := fmt.Fprintf(out, "\n%s still %s claims the group (%s) no longer has, whose release failed:\n  %s\n",
				strings.Join(past, ", "), map[bool]string{true: "holds", false: "hold"}[len(past) == 1], why, strings.Join(failed, "\n  "))
			return err
		}
		_, err := fmt.Fprintf(out, "\n%s still %s claims the group (%s) no longer has: a `group stop` or scale-down cut short (killed) left them, "+
			"or one is releasing them now; `volctl reconcile` releases them\n", strings.Join(past, ", "), map[bool]string{true: "holds", false: "hold"}[len(past) == 1], why)
		return err
	}
	return nil
}

// GroupStopOptions are the inputs of `volctl group stop`.
type GroupStopOptions struct {
	IO     *iostreams.IOStreams
	Engine func(context.Context) (*engine.Engine, error)

	Name     string
	Purge    bool
	Exporter exportFlags
}

func newCmdGroupStop(f *Factory, runF func(*GroupStopOptions) error) *cobra.Command {
	opts := &GroupStopOptions{IO: f.IO, Engine: f.Engine}
	cmd := &cobra.Command{
		Use:   "stop NAME",
		Short: "Stop a group and release its claims",
		Long: `Mark a group stopped and release every claim its allocs hold, naming the claims it released
("it held no claims" when there were none) and those another volctl (a stop beside it, a
release) released while it waited for them. A release that fails is left for volctl reconcile,
which releases the claims of stopped groups (exit 1 meanwhile).

A stopped group stays recorded, and volctl group status lists it. --purge
forgets it once its claims are released, as nomad job stop -purge does: volctl
group status lists it no more, and a group run of its name starts a new group.
A group whose claims were not all released is not purged (exit 1; it stays
recorded, stopped, for the reconcile that releases them: a stopped group's
claims are found by its record), nor is one run again meanwhile (exit 4); the
same command again purges it. A group stopped before is purged at once.`,
		Example: `  volctl group stop web
  volctl group stop ci-1234 --purge`,
		Args: exactArgs(1),
		RunE: runOpts(opts, idArg(&opts.Name), runF, groupStopRun),
	}
	cmd.Flags().BoolVar(&opts.Purge, "purge", false, "forget the group once its claims are released")
	addActingExportFlags[engine.GroupInfo](cmd, &opts.Exporter, opts.IO)
	return cmd
}

func groupStopRun(ctx context.Context, opts *GroupStopOptions) error {
	e, err := opts.Engine(ctx)
	if err != nil {
		return err
	}
	pctx, done := startProgress(ctx, opts.IO, opts.Exporter.Enabled())
	stop, what := e.StopGroup, "stopped"
	if opts.Purge {
		stop, what = e.PurgeGroup, "stopped and purged"
	}
	info, err := stop(pctx, opts.Name)
	done()
	if err != nil {
		return err
	}
	// Scrubbed as group run and group status scrub theirs: a volume's ID may hold a secret
	// (TestGroupStopMasksASecretInTheReleasedVolumesID).
	if err := redactOutput(ctx, e, nil, &info); err != nil {
		return afterDone(err, "group %q %s", opts.Name, what)
	}
	did := releasedWords(info)
	if did == "" {
		did = "it held no claims"
	}
	if opts.Exporter.Enabled() {
		if info.Allocs == nil {
			info.Allocs = []engine.AllocInfo{}
		}
		return afterDone(opts.Exporter.Write(ctx, opts.IO.Out, info), "group %q %s; %s", opts.Name, what, did)
	}
	return printDone(opts.IO.Out, fmt.Sprintf("Group %q %s; %s\n", opts.Name, what, did), "group %q %s; %s", opts.Name, what, did)
}

func newCmdGroup(f *Factory) *cobra.Command {
	return parentCmd("group", "Run groups of allocs that claim volumes", "",
		newCmdGroupRun(f, nil), withListAliases(newCmdGroupStatus(f, nil)), newCmdGroupStop(f, nil))
}
