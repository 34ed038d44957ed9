package cli

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"net/url"
	"path/filepath"
	"slices"
	"strconv"
	"strings"

	"github.com/spf13/cobra"

	"github.com/volctl/volctl/internal/display"
	"github.com/volctl/volctl/internal/engine"
	"github.com/volctl/volctl/internal/iostreams"
	"github.com/volctl/volctl/internal/nomad"
	"github.com/volctl/volctl/internal/shellquote"
	"github.com/volctl/volctl/internal/spec"
)

func newCmdNomad(f *Factory) *cobra.Command {
	return parentCmd("nomad", "Hand volumes over to a Nomad cluster, and take them back", `Move volumes to a Nomad cluster. The cluster is configured as for the nomad CLI: NOMAD_ADDR,
NOMAD_TOKEN, NOMAD_NAMESPACE, NOMAD_REGION, NOMAD_CACERT, NOMAD_CLIENT_CERT, NOMAD_CLIENT_KEY,
NOMAD_SKIP_VERIFY.

One orchestrator at a time: a volume registered in Nomad is marked as handed over, and volctl
refuses to claim it until volctl nomad release takes it back.

A command over many volumes stops asking Nomad once a request goes unanswered or is answered
busy (429, 502, 503, 504, no leader), or at Ctrl-C: the volumes not yet asked are named, with
the command that does them. register and release exit 1 when any volume failed otherwise
than by a refusal (Nomad not answering, a volume not asked, an error), which the same command
run again may get past, and 4 when every failure was a refusal (a conflict); what each volume
came to is said on its own line.`,
		newCmdNomadRegister(f, nil), newCmdNomadRelease(f, nil), newCmdNomadStatus(f, nil))
}

func nomadClient() (*nomad.Client, error) { return nomad.NewClient("") }

// connectNomad is the client get makes, whose credentials (the ACL token, a basic auth password
// and its header's encoding) a crash report is scrubbed of from here on (noteSecrets), and its
// plain users masked in as words (noteWords): a panic's value may print a request, or the
// client, whole.
func connectNomad(get func() (*nomad.Client, error)) (*nomad.Client, error) {
	c, err := get()
	if c != nil {
		noteSecrets(c.Credentials()...)
		noteWords(c.Words()...)
	}
	return c, err
}

// NomadRegisterOptions are the inputs of `volctl nomad register`.
type NomadRegisterOptions struct {
	IO     *iostreams.IOStreams
	Engine func(context.Context) (*engine.Engine, error)
	Nomad  func() (*nomad.Client, error)

	Volumes  []string
	All      bool
	DryRun   bool
	Force    bool
	Exporter exportFlags // --json, --jq, -t: the plan of --dry-run

	plans *[]NomadRegisterPlan // --dry-run's, collected for --json
	// warnedPlainHTTP: the command said once that volumes' secrets go over plain HTTP.
	warnedPlainHTTP bool
}

func newCmdNomadRegister(f *Factory, runF func(*NomadRegisterOptions) error) *cobra.Command {
	opts := &NomadRegisterOptions{IO: f.IO, Engine: f.Engine, Nomad: nomadClient}
	cmd := &cobra.Command{
		Use:   "register VOLUME... | --all",
		Short: "Register volumes in a Nomad cluster and hand them over",
		Long: `Register volumes in the Nomad cluster (as nomad volume register would, with the spec volctl
export nomad writes), after checking that their plugin runs in Nomad, is healthy, and is the
same driver as here. Registering a volume Nomad has already is an update. A volume whose spec
names the default namespace goes to NOMAD_NAMESPACE's when that names another (as the job
volctl export nomad writes for it does), and the command says so.

A volume with live local claims is not handed over (exit 4, naming them) unless --force,
which leaves those claims as they are (volctl's own plugin then refuses Nomad's allocs the
volume, staged locally, until they go); not even with --force when they hold an attachment
(the volume is recorded attached, or its plugin attaches volumes): Nomad sends
ControllerUnpublishVolume for this node when an alloc's claim of it ends, which would detach
the volume from under them;
nor is one still recorded attached to a node with no claim (a ControllerUnpublishVolume a
forced detach could not send: run volctl reconcile first), unless it is handed over already;
nor, unless --force, is one still owed a NodeExpandVolume (grown while on no path here: volctl
sends it at the next publish, Nomad never would): claim and release it once first; nor one
whose storage another volume recorded here (the same external ID, through a plugin ID on the
same socket) holds, claimed, staged or handed over itself: deregister one of the two first.
While a volume is handed over,
volctl never sends ControllerUnpublishVolume for it: when the last local claim of a volume
handed over with --force goes, its attachment stays recorded until volctl nomad release.
Before registering, the volume is marked as handed over, so volctl refuses to claim it from
then on. A volume Nomad has by the same ID with another plugin or external ID is someone
else's: it is not overwritten (exit 4); nor is one registered whose storage (plugin and
external ID) Nomad has as another volume, under another ID or in another namespace (exit 4),
whose allocs Nomad would let use it at once (Nomad lists a token only the volumes of the
namespaces its policy grants csi-list-volume in: twins in the others are not seen). After Nomad answers OK, the volume is read back and
must be what was sent, or the command fails naming what differs. A registration that fails
may have been taken all the same (a 500 can come after Nomad took it; so can the connection
lost, no answer within a minute, Ctrl-C): Nomad is then asked whether it has the volume, and
the mark is taken back only when it has not and the registration was settled: refused for
certain (a 4xx, or never sent), or answered by Nomad with an error it gives only for a
registration it did not apply (its checks before applying, no leader). A registration Nomad
did not answer (or answered with any other 5xx, such as a Raft or RPC failure) keeps
the mark even when Nomad says it has no such volume right after, since Nomad may still apply
it; the error says what to run: the same command again finishes the handover (an update
if Nomad took it). Until Nomad answers a registration of the volume OK, volctl nomad release
does not take it back on Nomad's word that it has no such volume either.

For a volume with secrets or mount flags, the command warns when Nomad's servers run a
version before 1.11.1 (1.10.7 and 1.8.19 Enterprise), which erase them from Nomad's copy each
time they send the volume's event to an event-stream subscriber (hashicorp/nomad#27176),
and notes that it cannot tell when NOMAD_TOKEN may not read them (the "node" policy "read").
Registering a volume Nomad has already, not handed over by volctl, replaces the secrets of
Nomad's copy (which Nomad never shows) with volctl's: for one without any here, the command
and its --dry-run say so. An update replaces its copy's capabilities, mount options, context
and capacity with volctl's too: the command says what it replaced, field by field, as its
--dry-run says what it would. One Nomad refuses for what its copy has (its name, parameters or
topology request, which it never changes; mount options while its allocs use the volume; a
capacity below its own) exits 4, as --dry-run does: the same registration is refused again
until Nomad's copy is deregistered, and the error says how; one whose copy is another
volume (another plugin or external ID) exits 4 too, and is not advised deregistered. One
whose plugin failed to grow the volume to a larger capacity_min (Nomad's "unable to expand
volume") exits 1: Nomad applied nothing, and running it again once the plugin answers
finishes it.

--dry-run shows what would be registered or changed, and changes nothing; it exits 4 when a
registration would not go through (refused, or failing its read-back), each reason on a line
of its own, so that a script or CI can gate the handover on it; 1, as the registration, when
the volume's plugin does not run or is not healthy in Nomad (start its job, then run it
again). It asks the cluster's leader twice and its servers first, as the registration does:
through an address more than one cluster answers at it plans nothing (exit 1), and a volume
handed to a cluster whose servers are none of those answering now would be refused (exit 4).
With --json (or --jq, -t) it prints that plan as JSON instead, one object per volume
(docs/json.md).`,
		Example: `  NOMAD_ADDR=http://127.0.0.1:4646 volctl nomad register db
  volctl nomad register --all --dry-run
  volctl nomad register --all --dry-run --jq '.[] | select(.would_fail) | .id'`,
		RunE: runOpts(opts, idArgs(&opts.Volumes), runF, nomadRegisterRun),
	}
	cmd.Flags().BoolVar(&opts.All, "all", false, "register every volume")
	cmd.Flags().BoolVar(&opts.DryRun, "dry-run", false, "show what would change; change nothing")
	cmd.Flags().BoolVar(&opts.Force, "force", false, "hand volumes over despite live local claims (none holding an attachment), an unpublish or a node expansion owed")
	addActingExportFlags[[]NomadRegisterPlan](cmd, &opts.Exporter, opts.IO)
	return cmd
}

func selectVolumes(ctx context.Context, e *engine.Engine, cmd string, ids []string, all bool) ([]string, error) {
	switch {
	case all && len(ids) > 0:
		return nil, usageError("%s: --all takes every volume; do not name volumes with it", cmd)
	case !all && len(ids) == 0:
		return nil, usageError("%s: name volumes, or --all", cmd)
	case !all:
		return ids, nil
	}
	vols, err := e.Volumes(ctx)
	if err != nil {
		return nil, err
	}
	for _, v := range vols {
		ids = append(ids, v.ID)
	}
	return ids, nil
}

func nomadRegisterRun(ctx context.Context, opts *NomadRegisterOptions) error {
	e, err := opts.Engine(ctx)
	if err != nil {
		return err
	}
	ids, err := selectVolumes(ctx, e, "nomad register", opts.Volumes, opts.All)
	if err != nil {
		return err
	}
	if opts.Exporter.Enabled() && !opts.DryRun {
		return usageError("nomad register: --json, --jq and -t print the plan of --dry-run: add --dry-run")
	}
	c, err := connectNomad(opts.Nomad)
	if err != nil {
		return fmt.Errorf("nomad register: %w", err)
	}
	var planned []NomadRegisterPlan
	if opts.DryRun {
		opts.plans = &planned
	}
	plugins, erasing := map[string]pluginAnswer{}, &erasingAnswer{}
	errs := askEach(ctx, c, ids, func(rest []string) string {
		var flags []string
		if opts.Force {
			flags = append(flags, "--force")
		}
		if opts.DryRun {
			// A plan's rest is planned: without it, the command pasted registers them in
			// Nomad and marks them handed over (TestDryRunNotAskedAdviceKeepsDryRun).
			flags = append(flags, "--dry-run")
		}
		if opts.All {
			return strings.Join(append([]string{"volctl nomad register --all"}, flags...), " ")
		}
		return shellquote.CommandFlags("volctl nomad register", rest, flags...)
	}, func(id string) error {
		n := len(planned)
		err := nomadRegisterOne(ctx, opts, e, c, plugins, erasing, id)
		if err != nil && opts.DryRun && len(planned) == n { // not planned: why
			p := NomadRegisterPlan{ID: id, NomadAddress: c.Address, Error: err.Error()}
			if ExitCode(err) == ExitConflict {
				// A refusal before the plan (a namespace Nomad cannot name): what would stop the
				// registration, as the plan's exit status 4 says (docs/json.md); before, the
				// plan said it as an error, and exited 4 with no would_fail.
				p.Error, p.WouldFail = "", []string{err.Error()}
			}
			planned = append(planned, p)
		}
		return err
	})
	if opts.Exporter.Enabled() {
		if planned == nil {
			planned = []NomadRegisterPlan{}
		}
		// What Nomad said is scrubbed of every secret volctl knows and the credentials sent
		// to it, as nomad status's output is.
		var keep []*string
		for i := range planned {
			keep = append(keep, &planned[i].ID, &planned[i].NomadNamespace)
		}
		if err := redactNomadOutput(ctx, e, c, keep, &planned); err != nil {
			return fmt.Errorf("nomad register: %w", err)
		}
		if err := opts.Exporter.Write(ctx, opts.IO.Out, planned); err != nil {
			return err
		}
	}
	if opts.DryRun && len(errs) > 0 {
		// The plan exits 4 when any registration would not go through, an error beside
		// it or not: a CI gating the handover on it stops there (docs/json.md).
		return fmt.Errorf("nomad register: %w", errors.Join(errs...))
	}
	return manyFailed("nomad register", errs)
}

// manyFailed is the error of a command over many volumes (cmd) whose volumes failed with errs
// (nil for none): exit 1 when any of them failed otherwise than by a refusal, a conflict
// (exit 4: Nomad not answering, a volume not asked, an error), which the same command run
// again may get past, so that a script reading 4 as "refused: change something first" does
// not leave the rest of a handover cut short undone; else their own code.
func manyFailed(cmd string, errs []error) error {
	if len(errs) == 0 {
		return nil
	}
	err := fmt.Errorf("%s: %w", cmd, errors.Join(errs...))
	if len(errs) == 1 {
		err = fmt.Errorf("%s: %w", cmd, errs[0])
	}
	for _, e := range errs {
		if ExitCode(e) == ExitError {
			return withCode(ExitError, err)
		}
	}
	return err
}

// askEach runs ask for each volume of ids in turn, collecting the errors, while Nomad answers:
// once a request of c's went unanswered or was answered busy (nomad.Client.Stopped), or the
// command was interrupted, the rest are not asked (each would wait out the request's timeout
// or fail the same) and one error names them and again(rest), the command that does them.
// (nomad status, which shows every volume all the same, checks stopAsking itself.)
func askEach(ctx context.Context, c *nomad.Client, ids []string, again func(rest []string) string, ask func(id string) error) (errs []error) {
	for i, id := range ids {
		if why := stopAsking(ctx, c); why != nil {
			return append(errs, notAsked(ids[i:], why, again))
		}
		if err := ask(id); err != nil {
			errs = append(errs, err)
		}
	}
	return errs
}

// stopAsking is why a command over many volumes asks Nomad nothing more (askEach): a request
// of c's went unanswered or was answered busy, or the command was interrupted. nil to go on.
func stopAsking(ctx context.Context, c *nomad.Client) error {
	if ctx.Err() != nil {
		return &interruptedAsking{context.Cause(ctx)}
	}
	return c.Stopped()
}

// interruptedAsking is stopAsking's error for a command interrupted (Ctrl-C).
type interruptedAsking struct{ cause error }

func (e *interruptedAsking) Error() string {
	return fmt.Sprintf("the command was interrupted (%v)", e.cause)
}
func (e *interruptedAsking) Unwrap() error { return e.cause }

// notAsked is the error naming the volumes rest that a command did not ask Nomad about, why
// (stopAsking), and again(rest), the command that does them.
func notAsked(rest []string, why error, again func(rest []string) string) error {
	when := " once it answers"
	if _, ok := why.(*interruptedAsking); ok {
		when = ""
	}
	return fmt.Errorf("%s: not asked: %w; run `%s` again%s", namedVolumes(rest), why, again(rest), when)
}

// namedVolumes names the volumes ids for a message, the first ten of them when there are
// more: volume "a", or volumes "a", "b" and 3 more.
func namedVolumes(ids []string) string {
	if len(ids) == 1 {
		return fmt.Sprintf("volume %q", ids[0])
	}
	const most = 10
	quoted := make([]string, 0, most)
	for _, id := range ids[:min(len(ids), most)] {
		quoted = append(quoted, strconv.Quote(id))
	}
	s := "volumes " + strings.Join(quoted, ", ")
	if len(ids) > most {
		s += fmt.Sprintf(" and %d more", len(ids)-most)
	}
	return s
}

// pluginAnswer is Nomad's answer about a plugin, kept for the rest of a command
// (nomadRegisterOne).
type pluginAnswer struct {
	health nomad.PluginHealth
	err    error
	// others are the IDs Nomad runs a driver's plugins under (otherPluginIDs), for the entry
	// of the driver.
	others []string
}

func nomadRegisterOne(ctx context.Context, opts *NomadRegisterOptions, e *engine.Engine, c *nomad.Client, plugins map[string]pluginAnswer, erasing *erasingAnswer, id string) error {
	info, err := e.Volume(ctx, id)
	if err != nil {
		return err
	}
	if !namedExactly(info.ID, id) {
		return fmt.Errorf("volume %q not found (did you mean %q?)", id, info.ID)
	}
	id = info.ID // as stored: Nomad gets the ID volctl has
	if err := spec.ValidateNamespace(info.Namespace); info.Namespace != "" && err != nil {
		// One an older volctl took (team_a), as export nomad refuses it: sent, Nomad refused it
		// as in a namespace it does not have, and the advice to create that namespace was one
		// Nomad refuses too (TestRegisterOfANamespaceNomadCannotNameSaysHowItMoves).
		return withCode(ExitConflict, fmt.Errorf("volume %q is in namespace %q, which no Nomad namespace can be named (its names are ASCII letters, digits and hyphens), so Nomad can hold no volume in it: nothing sent to Nomad; %s",
			info.ID, info.Namespace, spec.MoveNamespace(info.ID)))
	}
	want := nomad.RegisterSpec(info)
	if err := c.WildcardNamespace(want); err != nil {
		return err
	}
	to := engine.HandoverTarget{Address: c.Address, Region: c.Region, Namespace: c.APIVolume(want).Namespace}
	if h := info.Handover; h != nil && !opts.DryRun {
		// Handed over elsewhere: refused whatever this cluster says (HandOver checks it again
		// under the volume's lock).
		if err := h.Elsewhere(to); err != nil {
			return err
		}
	}
	// A volume handed over elsewhere is refused whatever this cluster's plugin is: its --dry-run
	// does not ask about the plugin either, and its plan says the refusal (exit 4), as the
	// registration does, where it said the plugin's absence here (exit 1, "run its job first").
	if h := info.Handover; h == nil || h.To(to) {
		if err := pluginReady(ctx, c, plugins, info); err != nil {
			return err
		}
	}
	// Said before Nomad is sent anything: its refusal names neither the volume nor a way out.
	capsWarning := ""
	if why := nomad.CapabilitiesRefused(want.Capabilities); why != "" {
		// In the order written, each step works: the deregister forgets the secrets and
		// context no command shows, so the export that keeps them comes first. Before, it
		// advised the deregister, then a `volume status` of what it had forgotten
		// (TestNomadRegisterCapabilitiesAdviceWorksInTheOrderWritten), as export's note did
		// until round 66.
		file := filepath.Join("nomad", "volume-"+id+".hcl")
		capsWarning = fmt.Sprintf("volume %q: Nomad may refuse it: %s; if its plugin does, hand Nomad a volume of the one capability its jobs use: "+
			"`%s` writes its spec, secrets and context kept, to %s; keep there only that capability block, then `%s` (its storage stays), `%s`, and register it with Nomad again",
			id, why, shellquote.Command("volctl export nomad --include-secrets --no-plugin-job", id), spec.QuoteName(file),
			shellquote.Command("volctl volume deregister", id), shellquote.Command("volctl volume register", file))
	}
	if opts.DryRun {
		plan, err := planRegistration(ctx, opts, e, c, erasing, info, want, to)
		if plan != nil && capsWarning != "" {
			plan.Warnings = append(plan.Warnings, capsWarning)
			fmt.Fprintf(opts.IO.ErrOut, "Warning: %s\n", escapeLines(capsWarning))
		}
		if plan != nil && opts.plans != nil {
			*opts.plans = append(*opts.plans, *plan)
		}
		return err
	}
	if capsWarning != "" {
		fmt.Fprintf(opts.IO.ErrOut, "Warning: %s\n", escapeLines(capsWarning))
	}
	if w := secretsInTheClear(id, want, c.Address, "go"); w != "" && !opts.warnedPlainHTTP {
		// Said once a command, before the first volume whose secrets go: sent in the clear
		// over a network, as Nomad's own CLI sends them, without a word
		// (TestNomadRegisterSaysSecretsGoOverPlainHTTP).
		opts.warnedPlainHTTP = true
		fmt.Fprintf(opts.IO.ErrOut, "Warning: %s\n", escapeLines(w))
	}
	// Mark first: from here on volctl refuses to claim the volume. The registration runs under
	// the volume's lock, which nomad release takes to ask Nomad and remove the mark, and sends
	// the volume as read under it (an expand or update may have finished since info was read);
	// nomad.Client.HandOver checks Nomad's copy before and after, and says when the mark goes.
	var done nomad.Handed
	var sent engine.VolumeInfo // the volume as sent, read under the lock
	handed, err := e.HandOver(ctx, id, to, opts.Force, func(ctx context.Context, first bool, v engine.VolumeInfo) (engine.Registered, error) {
		// The mark names the namespace of the first read, and the plugin checked is that
		// read's: a volume deregistered and registered again by another process since (in
		// another namespace, of another plugin) is not sent, or Nomad would have it where the
		// mark does not say (nomad release would take its 404 from there) or of a plugin
		// not checked.
		if ns := c.APIVolume(nomad.RegisterSpec(v)).Namespace; ns != to.Namespace || v.PluginID != info.PluginID {
			return engine.Registered{Undo: true}, withCode(ExitConflict, fmt.Errorf("volume %q: deregistered and registered again meanwhile, now in namespace %s of plugin %q (it was in %s, of %q): nothing sent to Nomad at %s; run `%s` again",
				id, ns, v.PluginID, to.Namespace, info.PluginID, c.Address, shellquote.Command("volctl nomad register", id)))
		}
		var err error
		sent = v
		var marked []string // the servers of the cluster it was handed to before, as recorded
		if v.Handover != nil {
			marked = v.Handover.Peers
		}
		done, err = c.HandOver(ctx, nomad.RegisterSpec(v), first, marked)
		if done.Plugin != nil && done.Plugin.ID == info.PluginID {
			plugins[info.PluginID] = pluginAnswer{health: *done.Plugin}
		}
		if errors.Is(err, nomad.ErrOtherVolume) || errors.Is(err, nomad.ErrSameStorage) || errors.Is(err, nomad.ErrUpdateRefused) || errors.Is(err, nomad.ErrOtherCluster) {
			err = withCode(ExitConflict, err)
		}
		return engine.Registered{Undo: done.Undo, OK: done.OK, InFlight: done.InFlight, Index: done.Index, Peers: done.Peers}, err
	})
	if err != nil {
		return err
	}
	verb := "Registered"
	if done.Updated {
		verb = "Updated"
	}
	if done.Warnings != "" {
		fmt.Fprintf(opts.IO.ErrOut, "Warning: Nomad: %s\n", escapeLines(done.Warnings))
	}
	if done.Unchecked != "" {
		fmt.Fprintf(opts.IO.ErrOut, "Note: %s\n", escapeLines(scrubbedNote(ctx, e, c, done.Unchecked)))
	}
	if w := erasing.warning(ctx, c, want, "then run `"+shellquote.Command("volctl nomad register", id)+"` again"); w != "" {
		fmt.Fprintf(opts.IO.ErrOut, "Warning: %s\n", w)
	}
	if n := erasing.note(); n != "" {
		fmt.Fprintf(opts.IO.ErrOut, "Note: %s\n", n)
	}
	if done.Updated && info.Handover == nil {
		if n := secretsReplaced(want, true); n != "" {
			fmt.Fprintf(opts.IO.ErrOut, "Note: %s\n", n)
		}
	}
	if n := replacedInNomad(ctx, e, c, done.Before, sent); n != "" {
		fmt.Fprintf(opts.IO.ErrOut, "Note: %s\n", n)
	}
	where := inNamespace(info.Namespace, to.Namespace)
	if where != "" {
		where += ": `" + engine.HandoverInfo{Namespace: to.Namespace, Region: to.Region}.NomadCommand("volume status", id) + "` shows it"
	}
	claims := "volctl no longer claims it"
	// Each note words the volume's record (a node a plugin named, another record's ID, allocs):
	// scrubbed as the command's other notes are (scrubbedNote;
	// TestNomadRegisterForcedPastAnOwedUnpublishNoteShowsNoSecretInTheNode).
	if n := expansionKeptNote(id, sent); n != "" {
		fmt.Fprintf(opts.IO.ErrOut, "Note: %s\n", escapeLines(scrubbedNote(ctx, e, c, n)))
	}
	if n := forcedPastNote(id, sent, handed.StorageHeldElsewhere); n != "" {
		fmt.Fprintf(opts.IO.ErrOut, "Note: %s\n", escapeLines(scrubbedNote(ctx, e, c, n)))
	}
	if n := keptClaimsNote(id, sent); n != "" {
		// Handed over with --force past live local claims: they stay, and Nomad's allocs may
		// be refused the volume while they do. Before, only "volctl no longer claims it",
		// while it held them (TestForcedHandoverNamesTheLiveClaimsItLeaves).
		fmt.Fprintf(opts.IO.ErrOut, "Note: %s\n", escapeLines(scrubbedNote(ctx, e, c, n)))
		claims = fmt.Sprintf("volctl makes no new claim of it, and keeps its %d live local claim(s) until they are released", len(sent.Claims))
	}
	return printDone(opts.IO.Out, fmt.Sprintf("%s volume %q in Nomad at %s%s; %s\n", verb, id, c.Address, where, claims),
		"volume %q %s in Nomad at %s", id, strings.ToLower(verb), c.Address)
}

// expansionKeptNote says, of volume id handed over owing an expansion (v, as sent: --force), that
// it waits for the take-back and what Nomad's allocs get meanwhile; "" when it owes none.
// Before, the handover said only "Registered" (TestNomadRegisterForcedPastAnOwedNodeExpansionSaysSo).
func expansionKeptNote(id string, v engine.VolumeInfo) string {
	release := shellquote.Command("volctl nomad release", id)
	var notes []string
	if v.ExpansionPending > 0 {
		notes = append(notes, fmt.Sprintf("volume %q was handed over with an expansion to %s pending (a ControllerExpandVolume whose answer is not recorded): "+
			"it waits for the volume to be taken back (`%s`), then `volctl reconcile` finishes it", id, spec.FormatSize(v.ExpansionPending), release))
	}
	if v.NodeExpansionOwed > 0 {
		notes = append(notes, fmt.Sprintf("volume %q was handed over still owed a NodeExpandVolume to %s: Nomad's allocs get its file system at the old size, "+
			"and the step waits for the volume to be taken back (`%s`), then for its next publish here", id, spec.FormatSize(v.NodeExpansionOwed), release))
	}
	return strings.Join(notes, "; ")
}

// secretsInTheClear warns that volume id's secrets (want, as it would be sent: its secrets
// block, and a mount flag holding one, a cifs password=, which export writes as a placeholder
// and every message masks) go ("go", or "would go") to Nomad at address over plain HTTP to
// another host; "" when none would. A mount flag's password went unsaid
// (TestNomadRegisterSaysMountFlagPasswordsGoOverPlainHTTP), and so did the plan's
// (TestNomadRegisterDryRunSaysSecretsWouldGoOverPlainHTTP), the one place to learn it before
// the secrets cross the network.
func secretsInTheClear(id string, want spec.Volume, address, verb string) string {
	what := ""
	switch {
	case len(want.Secrets) > 0:
		what = "secrets"
	case want.MountOptions != nil && slices.ContainsFunc(want.MountOptions.MountFlags, func(f string) bool { return len(spec.MountFlagSecrets(f)) > 0 }):
		what = "mount flags' secrets (a password= in its mount_flags)"
	}
	if what == "" || !plainHTTPOffHost(address) {
		return ""
	}
	return fmt.Sprintf("volume %q's %s %s to Nomad at %s over plain HTTP, readable on the network between: "+
		"enable TLS in Nomad's tls block and say https:// in NOMAD_ADDR", id, what, verb, address)
}

// plainHTTPOffHost reports a Nomad address of plain HTTP to another host than this one (a
// loopback address or localhost is this host: nothing crosses a network).
func plainHTTPOffHost(address string) bool {
	u, err := url.Parse(address)
	if err != nil || u.Scheme != "http" {
		return false
	}
	host := u.Hostname()
	if host == "localhost" {
		return false
	}
	ip := net.ParseIP(host)
	return ip == nil || !ip.IsLoopback()
}

// forcedPastNote says, of volume id handed over (v, as sent) with another record of its storage
// here (held: heldElsewhere, which a first handover was forced past), or still recorded
// attached with no claim, what that leaves; "" when neither. Before, a handover forced past
// them said only "Registered" (TestNomadRegisterForcedPastAnotherRecordOfItsStorageSaysSo,
// TestNomadRegisterForcedPastAnOwedUnpublishSaysSo), and one not forced past an idle record
// was warned of a use that was not there
// (TestNomadRegisterNotForcedDoesNotSayItWasForcedPastAnIdleRecordOfItsStorage).
func forcedPastNote(id string, v engine.VolumeInfo, heldElsewhere bool) string {
	var notes []string
	if len(v.SameStorage) > 0 {
		deregister := make([]string, 0, len(v.SameStorage))
		for _, other := range v.SameStorage { // "ID (plugin P)"
			otherID, _, _ := strings.Cut(other, " (plugin ")
			deregister = append(deregister, "`"+shellquote.Command("volctl volume deregister", otherID)+"`")
		}
		if heldElsewhere {
			notes = append(notes, fmt.Sprintf("volume %q was handed over while this host records its storage as %s too, held here: Nomad's allocs and volctl's claims of that share one storage, "+
				"each ignoring the other's access mode; stop using it here, and once nothing holds it, deregister it (%s)",
				id, strings.Join(v.SameStorage, ", "), strings.Join(deregister, ", ")))
		} else {
			notes = append(notes, fmt.Sprintf("this host records volume %q's storage as %s too, which nothing holds: its claims are refused while %q is with Nomad; %s forgets that record",
				id, strings.Join(v.SameStorage, ", "), id, strings.Join(deregister, ", ")))
		}
	}
	if v.AttachedTo != "" && len(v.Claims) == 0 {
		notes = append(notes, fmt.Sprintf("volume %q was handed over still recorded as attached to node %q with no claim: the ControllerUnpublishVolume owed waits for the volume to be taken back (`%s`), then `volctl reconcile` sends it%s",
			id, v.AttachedTo, shellquote.Command("volctl nomad release", id), v.UnpublishBlockAfterTakeBack()))
	}
	return strings.Join(notes, "; ")
}

// keptClaimsNote says, of volume id handed over with live local claims (v, as sent: --force),
// which allocs keep it here, what that means for Nomad's allocs, and how they go; "" when it
// has none.
func keptClaimsNote(id string, v engine.VolumeInfo) string {
	if len(v.Claims) == 0 {
		return ""
	}
	allocs := make([]string, 0, len(v.Claims))
	var release []string
	for _, cl := range v.Claims {
		allocs = append(allocs, strconv.Quote(cl.Alloc))
		if len(release) < 3 {
			release = append(release, "`"+shellquote.CommandFlags("volctl volume release", []string{id}, shellquote.Flag("--alloc", cl.Alloc))+"`")
		}
	}
	return fmt.Sprintf("volume %q was handed over with its live local claim(s) of alloc(s) %s, which stay staged and published here: "+
		"its plugin may refuse Nomad's allocs the volume until they go (volctl's own does, staging a volume at one path only); release them when their allocs are done (%s)",
		id, strings.Join(allocs, ", "), strings.Join(release, ", "))
}

// otherPluginIDs are the IDs of the plugins Nomad at c runs of volume info's driver (its
// provider, as its plugin answered GetPluginInfo) when Nomad has no plugin of info's plugin
// ID, listed once per driver in a command (plugins, under the driver's name after a NUL, which
// no plugin ID holds); none when the
// driver is not known or Nomad does not list its plugins (the error said is the missing
// plugin's).
func otherPluginIDs(ctx context.Context, c *nomad.Client, plugins map[string]pluginAnswer, info engine.VolumeInfo) []string {
	if info.Provider == "" {
		return nil
	}
	key := "\x00" + info.Provider
	pa, asked := plugins[key]
	if !asked {
		pa.others, pa.err = c.PluginsOfDriver(ctx, info.Provider)
		plugins[key] = pa
	}
	return pa.others
}

// pluginReady checks that volume info's plugin runs in Nomad at c, is healthy, and is the same
// driver (nomadRegisterOne). Nomad is asked once per plugin in a command (plugins); the health
// it gives with each volume it reads back then stands for it, so a plugin that turns unhealthy
// part way is named for the volumes after. Its answer that it has no such plugin, or that the
// token may not read it (a 403), stands too; any other failure (a 500) is asked again by the
// next volume, as the volume list is: kept, one passing 500 failed every later volume of the
// plugin in a `register --all` with an answer Nomad never gave about them
// (TestPluginLookupFailedOnceIsAskedAgain).
func pluginReady(ctx context.Context, c *nomad.Client, plugins map[string]pluginAnswer, info engine.VolumeInfo) error {
	id := info.ID
	pa, asked := plugins[info.PluginID]
	if !asked {
		pa.health, pa.err = c.Plugin(ctx, info.PluginID)
		if pa.err == nil || errors.Is(pa.err, nomad.ErrNotFound) || errors.Is(pa.err, nomad.ErrPermissionDenied) {
			plugins[info.PluginID] = pa
		}
	}
	p, err := pa.health, pa.err
	if errors.Is(err, nomad.ErrNotFound) {
		if other := otherPluginIDs(ctx, c, plugins, info); len(other) > 0 {
			// The same driver under another ID: a job of it run anew would be a second plugin.
			return fmt.Errorf("volume %q: plugin %q does not run in Nomad at %s, but its driver %q does, as plugin %s: a Nomad volume names its plugin by Nomad's plugin ID, and volctl registers it under volctl's (%q), which Nomad would refuse; make the two agree: run the plugin's job with `csi_plugin { id = %q }` (or register the plugin in volctl under Nomad's ID and the volume with it), then run `%s` again",
				id, info.PluginID, c.Address, info.Provider, quotedIDs(other), info.PluginID, info.PluginID, shellquote.Command("volctl nomad register", id))
		}
		return fmt.Errorf("volume %q: plugin %q does not run in Nomad at %s: run its job first (volctl export nomad writes the hostpath plugin's)", id, info.PluginID, c.Address)
	}
	if err != nil {
		return fmt.Errorf("volume %q: %w", id, err)
	}
	if info.Provider != "" && p.Provider != "" && p.Provider != info.Provider {
		// Nomad's word, the credentials sent replaced (TestNomadRegisterDriverMismatchDoesNotShowTheToken).
		return fmt.Errorf("volume %q: plugin %q in Nomad at %s is driver %q, but here it is %q: the volume's storage belongs to %s",
			id, info.PluginID, c.Address, c.Hide(p.Provider), info.Provider, info.Provider)
	}
	if !p.Healthy() {
		return fmt.Errorf("volume %q: plugin %q in Nomad at %s is not healthy (%s): wait for its allocations, or check them with `%s`",
			id, info.PluginID, c.Address, p.Describe(), shellquote.Command("nomad plugin status", info.PluginID))
	}
	return nil
}

// replacedInNomad says what an update of Nomad's copy before of volume v replaced with v's,
// field by field (nomad.Changes: capabilities, mount options, context, capacity), as
// --dry-run says it would: Nomad takes an update's, and what its copy had (set by hand with
// `nomad volume register`, or by an older volctl), which its jobs may rely on, was gone without
// a word. Empty when Nomad had no copy, or nothing compared changed.
func replacedInNomad(ctx context.Context, e *engine.Engine, c *nomad.Client, before *nomad.VolumeState, v engine.VolumeInfo) string {
	if before == nil {
		return ""
	}
	fields := nomad.Changes(*before, nomad.RegisterSpec(v))
	if len(fields) == 0 {
		return ""
	}
	words := strings.Join(fields, ", ")
	// Both sides' values (a context's may be a secret's), with no secret volctl knows nor the
	// credentials sent to Nomad, as --dry-run shows them.
	if ds := nomad.Differences(*before, v, fields); redactNomadOutput(ctx, e, c, nil, &ds) == nil {
		words = differenceWords(ds)
	}
	return fmt.Sprintf("volume %q: the registration replaced what Nomad's copy had with volctl's: %s; a job of Nomad's that relied on what it had (another access mode, mount options) fails to place or mount until its volume block asks what volctl's has, or Nomad's copy is registered again as it was",
		v.ID, escapeLines(words))
}

// NomadRegisterPlan is what `volctl nomad register --dry-run` finds for one volume: what the
// registration would do in Nomad, and what would stop it (docs/json.md).
type NomadRegisterPlan struct {
	ID           string `json:"id"`
	NomadAddress string `json:"nomad_address"`
	// NomadNamespace is the namespace the volume would be registered in.
	NomadNamespace string `json:"nomad_namespace,omitempty"`
	// Action is "register" (Nomad has no volume by the ID there), "update", "none" (Nomad has
	// it, and nothing compared would change) or "another" (Nomad's volume of the ID is another
	// one); absent with error.
	Action string `json:"action,omitempty"`
	// Changes names the fields an update would change (nomad.Changes).
	Changes []string `json:"changes,omitempty"`
	// Differences says, for each field an update would change, Nomad would refuse to change
	// or keep, what Nomad's copy has and what volctl's volume has (nomad.Differences).
	Differences []nomad.Difference `json:"differences,omitempty"`
	// WouldFail says what would stop the registration, one reason each: the command then
	// exits 4.
	WouldFail []string `json:"would_fail,omitempty"`
	// Warnings are what the command warns and notes of on stderr for the volume.
	Warnings []string `json:"warnings,omitempty"`
	// Error says why the volume could not be planned (its plugin not in Nomad, Nomad not
	// answering): the command then exits 1.
	Error string `json:"error,omitempty"`
}

// scrubbing writes each write's text scrubbed by redact first: for lines that word data a plugin
// returned.
type scrubbing struct {
	w      io.Writer
	redact func(string) string
}

func (s scrubbing) Write(p []byte) (int, error) {
	if _, err := io.WriteString(s.w, s.redact(string(p))); err != nil {
		return 0, err
	}
	return len(p), nil
}

// scrubbedNote is note scrubbed of every secret the state holds: a note that words a volume's
// record (nomad.Client.TwinsUnchecked's external ID) beside volctl's own names, which the
// credentials sent to Nomad are not scrubbed from (TestDryRunTextKeepsVolctlsOwnIDsEqualToACredential).
func scrubbedNote(ctx context.Context, e *engine.Engine, c *nomad.Client, note string) string {
	redact, err := e.Redactor(context.WithoutCancel(ctx))
	if err != nil {
		return fmt.Sprintf("(a note is withheld: reading the state to redact secrets from it: %v)", err)
	}
	return redact(note)
}

// planRegistration is --dry-run's look at volume info, whose registration spec is want, going
// to Nomad at c as to: it reads Nomad's copy and says (on opts.IO.Out, unless --json) what a
// registration would do and what would stop it, each on a line of its own. The error is exit
// 4 when anything would stop it, so that a script or CI gating on the plan stops where the
// registration would; the plan is nil when Nomad's copy could not be read.
func planRegistration(ctx context.Context, opts *NomadRegisterOptions, e *engine.Engine, c *nomad.Client, erasing *erasingAnswer, info engine.VolumeInfo, want spec.Volume, to engine.HandoverTarget) (*NomadRegisterPlan, error) {
	id := info.ID
	text := !opts.Exporter.Enabled()
	// Its lines word the volume's record (its external ID, the node a plugin named), which a
	// hostile plugin may have echoed a secret into: each is scrubbed of the state's secrets
	// (before, printed whole: TestNomadRegisterDryRunTextShowsNoSecretInTheExternalID). Not of
	// the credentials sent to Nomad, which would hide volctl's own names equal to one
	// (TestDryRunTextKeepsVolctlsOwnIDsEqualToACredential): what Nomad answered is hidden of
	// them where it is printed (nomad.Client.Hide).
	redact, err := e.Redactor(context.WithoutCancel(ctx))
	if err != nil {
		return nil, fmt.Errorf("volume %q: the plan is withheld: reading the state to redact secrets from it: %w", id, err)
	}
	out, errOut := scrubbing{opts.IO.Out, redact}, scrubbing{opts.IO.ErrOut, redact}
	if h := info.Handover; h != nil && !h.To(to) {
		// The registration refuses it before Nomad at c is asked anything (h.Elsewhere), and
		// so does its plan: reading Nomad's copy or its volumes there first made a cluster down
		// or refusing the read (a token without csi-read-volume there) exit 1, "run it again",
		// where the registration exits 4 every time.
		plan := &NomadRegisterPlan{ID: id, NomadAddress: c.Address, NomadNamespace: to.Namespace, WouldFail: []string{"it is handed over elsewhere"}}
		where := "its would_fail"
		if text {
			where = "said above"
			fmt.Fprintf(out, "Would not register volume %q in Nomad at %s%s (plugin %q, external ID %s)\n", id, c.Address, inNamespace(info.Namespace, to.Namespace), info.PluginID, shownQ(info.ExternalID))
			fmt.Fprintf(out, "  but it is handed over to Nomad at %s (namespace %s, region %q) already: it would be refused (take it back from there first: %s)\n",
				h.Address, h.Namespace, h.Region, h.TakeBackCommands())
		}
		return plan, withCode(ExitConflict, fmt.Errorf("volume %q: the registration would not go through: it is handed over elsewhere (%s)", id, where))
	}
	// The cluster that would take the registration, asked as the registration asks it before
	// it sends anything (nomad.Client.HandOver): through an address more than one cluster
	// answers at, what the plan reads could be either's, and the registration sends nothing
	// (exit 1, as it); a volume handed to a cluster whose servers are none of those answering
	// now is refused by the registration (exit 4, as it). Before, the plan read one cluster's
	// copy and said "would update" or "would register" of whichever answered.
	switch cl, err := c.OneCluster(ctx, to.Region); {
	case err != nil:
		return nil, fmt.Errorf("volume %q: %w", id, err)
	case cl.Crossed != "":
		return nil, c.CrossedRead(id, to.Namespace, to.Region, cl.Crossed, "would take the registration nor what it would find there, and the registration would send nothing")
	case info.Handover != nil && nomad.OtherCluster(info.Handover.Peers, cl.Peers):
		err := c.OtherClusterRead(id, to.Namespace, to.Region, info.Handover.Peers, cl.Peers, "the registration would go to another cluster than the one that has the volume, and would be refused")
		if text {
			fmt.Fprintf(out, "Would not register volume %q in Nomad at %s%s (plugin %q, external ID %s)\n", id, c.Address, inNamespace(info.Namespace, to.Namespace), info.PluginID, shownQ(info.ExternalID))
			fmt.Fprintf(out, "  but %s\n", display.Escape(c.Hide(err.Error())))
		}
		plan := &NomadRegisterPlan{ID: id, NomadAddress: c.Address, NomadNamespace: to.Namespace, WouldFail: []string{"another cluster answers than the one it is handed over to"}}
		return plan, withCode(ExitConflict, fmt.Errorf("volume %q: the registration would not go through: another cluster answers than the one it is handed over to (%s)", id, map[bool]string{true: "said above", false: "its would_fail"}[text]))
	}
	have, herr := c.Volume(ctx, id, info.Namespace)
	exists := herr == nil
	if herr != nil && !errors.Is(herr, nomad.ErrNotFound) {
		return nil, fmt.Errorf("volume %q: %w", id, herr)
	}
	plan := &NomadRegisterPlan{ID: id, NomadAddress: c.Address, NomadNamespace: to.Namespace}
	// Nomad's volume of the ID may be another one (someone else's): what registering this
	// one would change in it, or Nomad keep of it, is beside the point.
	other := []string(nil)
	if exists {
		other = c.Identity(have, want)
	}
	var line string
	switch ch := nomad.Changes(have, want); {
	case len(other) > 0:
		plan.Action = "another"
		line = fmt.Sprintf("Would not register volume %q in Nomad at %s%s (plugin %q, external ID %s)", id, c.Address, inNamespace(info.Namespace, to.Namespace), info.PluginID, shownQ(info.ExternalID))
	case !exists:
		plan.Action = "register"
		line = fmt.Sprintf("Would register volume %q in Nomad at %s%s (plugin %q, external ID %s)", id, c.Address, inNamespace(info.Namespace, to.Namespace), info.PluginID, shownQ(info.ExternalID))
	case len(ch) == 0:
		plan.Action = "none"
		line = fmt.Sprintf("Volume %q is registered in Nomad at %s: nothing would change (secrets are not compared)", id, c.Address)
	default:
		plan.Action, plan.Changes = "update", ch
		line = fmt.Sprintf("Would update volume %q in Nomad at %s: %s", id, c.Address, display.Escape(strings.Join(ch, ", ")))
	}
	if exists && len(other) == 0 {
		// Both sides' values (a context's may be a secret's), with no secret volctl knows
		// nor the credentials sent to Nomad, as nomad status shows them.
		plan.Differences = nomad.Differences(have, info, nomad.Differing(have, info))
		if err := redactNomadOutput(ctx, e, c, nil, &plan.Differences); err != nil {
			return nil, fmt.Errorf("volume %q: %w", id, err)
		}
	}
	if text {
		fmt.Fprintln(out, line)
		for _, d := range plan.Differences {
			fmt.Fprintf(out, "  %s\n", display.Escape(differenceWords([]nomad.Difference{d})))
		}
	}
	but := func(why, format string, args ...any) {
		plan.WouldFail = append(plan.WouldFail, why)
		if text {
			fmt.Fprintf(out, "  but "+format+"\n", args...)
		}
	}
	if !exists && c.NamespaceMissing(ctx, to.Namespace, to.Region) {
		// Nomad answers a volume's read in a namespace it lacks with a plain 404, as for a
		// volume it lacks; its registration there is refused. Before, the plan said "Would
		// register" and exited 0 (TestDryRunInANamespaceNomadLacksSaysItWouldFail).
		but("Nomad has no namespace "+to.Namespace, "Nomad has no namespace %s: it would be refused (%s)",
			display.Escape(to.Namespace), display.Escape(c.NoNamespaceWayOut(info.Namespace, to.Namespace, "")))
	}
	r := nomad.Refused(have, want)
	if exists && len(other) == 0 && slices.Contains(r, "capacity_max") {
		r = slices.DeleteFunc(r, func(f string) bool { return f == "capacity_max" })
		but("Nomad refuses a capacity_max below its copy's capacity", "Nomad's copy has a capacity of %s (grown in Nomad), above volctl's capacity_max of %s, and Nomad refuses a capacity_max below a volume's capacity: it would be refused (once deregistered in Nomad, `%s` records the size its plugin lists, and `%s` a larger limit)",
			spec.FormatSize(have.Capacity), spec.FormatSize(want.CapacityMax), shellquote.Command("volctl nomad release", id),
			shellquote.CommandFlags("volctl volume expand", []string{id}, "--size SIZE", "--limit MAX"))
	}
	if exists && len(other) == 0 && len(r) > 0 {
		but("Nomad refuses to change its "+strings.Join(r, ", "), "Nomad does not change a registered volume's %s, and volctl's differ from its copy's: it would be refused (deregister it in Nomad and register it again to change them)", strings.Join(r, ", "))
	}
	if u := nomad.RefusedInUse(have, want); exists && len(other) == 0 && len(u) > 0 {
		but("Nomad refuses to change the "+strings.Join(u, ", ")+" of a volume in use", "Nomad's allocs claim it (%d claim(s)), and Nomad does not change the %s of a volume in use to what volctl's are: it would be refused (stop the jobs whose allocs claim it first, or leave Nomad's copy as it is)",
			have.Claims(), strings.Join(u, ", "))
	}
	if k := nomad.Kept(have, want); exists && len(other) == 0 && len(k) > 0 {
		but("Nomad's copy would keep no "+strings.Join(k, ", "), "Nomad's copy has no %s, and volctl's has: Nomad keeps what a volume was first registered with, so it would stay without (its allocs placed on nodes that may not reach the volume), and the registration's read-back would fail on it: deregister it in Nomad and register it again to give it one", strings.Join(k, ", "))
	}
	if len(other) > 0 {
		// Nomad's words, which what answers for it may have filled with the token.
		but("Nomad's volume of the ID is another one", "Nomad's volume %q is another one (%s): it would be refused", id, display.Escape(c.Hide(strings.Join(other, ", "))))
	}
	switch twins, err := c.Twins(ctx, want, to.Namespace); {
	case errors.Is(err, nomad.ErrPermissionDenied):
		n := c.TwinsUnchecked(want)
		plan.Warnings = append(plan.Warnings, n)
		fmt.Fprintf(errOut, "Note: %s\n", escapeLines(n))
	case err != nil:
		return nil, err
	case len(twins) > 0:
		but("Nomad has its storage registered as another volume", "%s: it would be refused", display.Escape(c.TwinsError(want, to.Namespace, twins).Error()))
	}
	if info.State != "" && info.State != "ready" {
		// HandOver refuses it (engine notReady), Nomad asked nothing.
		interrupted := map[string]string{"creating": "create", "deleting": "delete"}[info.State]
		but("it is not ready", "it is %s, not ready: its %s was interrupted, and it would be refused (`volctl reconcile` finishes it)", info.State, interrupted)
	}
	if info.NodeExpansionOwed > 0 && info.Handover == nil && !opts.Force {
		but("it is owed a NodeExpandVolume", "it is owed a NodeExpandVolume to %s, which Nomad would never send: it would be refused without --force", spec.FormatSize(info.NodeExpansionOwed))
	}
	if info.AttachedTo != "" && len(info.Claims) == 0 && info.Handover == nil && !opts.Force {
		// HandOver refuses it (engine owedUnpublish): the attachment no claim holds, and says
		// what sends it as the registration's refusal does (OwedUnpublishWay).
		way, err := e.OwedUnpublishWay(ctx, info.PluginID)
		if err != nil {
			way = fmt.Sprintf("what sends it could not be read: %v", err)
		}
		but("it is owed a ControllerUnpublishVolume", "it is recorded as attached to node %q with no claim holding it, owed a ControllerUnpublishVolume (a forced detach could not send it) that Nomad would never send: it would be refused without --force (%s)",
			info.AttachedTo, way)
	}
	if info.ExpansionPending > 0 && info.Handover == nil && !opts.Force {
		but("it has an expansion pending", "it has an expansion to %s pending, which Nomad would never finish: it would be refused without --force (`volctl reconcile` finishes it)", spec.FormatSize(info.ExpansionPending))
	}
	if info.Handover == nil && !opts.Force {
		// HandOver refuses it (engine refuseStorageInUseElsewhere).
		if other, err := e.StorageHeldElsewhere(ctx, id); errors.Is(err, engine.ErrConflict) {
			but(fmt.Sprintf("volume %q records its storage too and holds it", other), "%v: it would be refused without --force", err)
		} else if err != nil {
			return nil, err
		}
	}
	if w := erasing.warning(ctx, c, want, "before handing it over"); w != "" {
		plan.Warnings = append(plan.Warnings, w)
		fmt.Fprintf(errOut, "Warning: %s\n", w)
	}
	if w := secretsInTheClear(id, want, c.Address, "would go"); w != "" {
		plan.Warnings = append(plan.Warnings, w)
		fmt.Fprintf(errOut, "Warning: %s\n", escapeLines(w))
	}
	if n := erasing.note(); n != "" {
		plan.Warnings = append(plan.Warnings, n)
		fmt.Fprintf(errOut, "Note: %s\n", n)
	}
	if exists && len(other) == 0 && info.Handover == nil {
		if n := secretsReplaced(want, false); n != "" {
			plan.Warnings = append(plan.Warnings, n)
			fmt.Fprintf(errOut, "Note: %s\n", n)
		}
	}
	if len(info.Claims) > 0 {
		if how := attachedUnderClaims(ctx, e, info); how != "" && info.Handover == nil {
			but("its live local claims hold an attachment", "it has %d live local claim(s) and %s: it would be refused, --force or not (Nomad's ControllerUnpublishVolume would detach it from under them)", len(info.Claims), how)
		} else if !opts.Force && info.Handover == nil {
			// Marked already, the handover was forced past them: HandOver does not refuse
			// the volume again for the claims it was forced past.
			but("it has live local claims", "it has %d live local claim(s): it would be refused without --force", len(info.Claims))
		}
	}
	if len(plan.WouldFail) > 0 {
		where := "said above"
		if !text {
			where = "its would_fail"
		}
		return plan, withCode(ExitConflict, fmt.Errorf("volume %q: the registration would not go through: %s (%s)", id, strings.Join(plan.WouldFail, "; "), where))
	}
	return plan, nil
}

// erasingAnswer is what a command learnt of Nomad's servers that erase a volume's secrets and
// mount flags whenever they send its event to an event-stream subscriber
// (nomad.ErasesSecretsOnEvents): asked once, for the first volume that has any.
type erasingAnswer struct {
	asked   bool
	servers []string // "NAME (BUILD)"
	// unchecked says, once (note), that Nomad refused to say which versions its servers run
	// (a token without node read), for the first volume that has secrets or mount flags.
	unchecked string
	noted     bool
}

// warning says, for a volume want with secrets or mount flags, that Nomad at c would erase
// them (then: what to do once that is seen to); empty when it would not, or when Nomad does
// not say its servers' versions: when it refuses to (a token without node read), note then
// says that volctl could not check, and how to.
func (a *erasingAnswer) warning(ctx context.Context, c *nomad.Client, want spec.Volume, then string) string {
	has := nomad.NotCompared(want) // its secrets and mount flags: what is erased
	if len(has) == 0 {
		return ""
	}
	if !a.asked {
		a.asked = true
		servers, err := c.Servers(ctx)
		switch {
		case err == nil:
			// Nomad's words, the credentials sent replaced, as every other of its answers shown
			// is: a server name echoing the token was printed on stderr
			// (TestNomadRegisterErasingWarningDoesNotShowTheToken).
			a.servers = nomad.ErasingServers(servers)
			for i, s := range a.servers {
				a.servers[i] = c.Hide(s)
			}
		case errors.Is(err, nomad.ErrPermissionDenied):
			a.unchecked = fmt.Sprintf("%s: NOMAD_TOKEN's ACL policy does not grant the \"node\" policy \"read\" that asking needs; `nomad server members`, run with a token whose policy does, shows them",
				notSaid(want, has, c))
		case ctx.Err() == nil:
			// Any other failure (Nomad's agent not reaching its servers, a proxy that passes
			// only the volume API answering 404) leaves as little to go by: said so, as for a
			// 403, not passed over as if the servers kept the secrets
			// (TestNomadRegisterSaysItCouldNotTellWhenNomadFailsTheServersQuestion).
			a.unchecked = fmt.Sprintf("%s: asking it failed (%s); `nomad server members` shows them", notSaid(want, has, c), escapeLines(c.Hide(err.Error())))
		}
	}
	if len(a.servers) == 0 {
		return ""
	}
	return fmt.Sprintf("volume %q has %s, which Nomad at %s erases from its copy each time it sends the volume's event to a subscriber of its event stream (topic CSIVolume or *; a registration makes one), and it then sends its plugin none (mount flags as [REDACTED]): its server(s) %s run a version before 1.11.1 (1.10.7, 1.8.19 Enterprise; hashicorp/nomad#27176); stop such subscribers or upgrade those servers, %s",
		want.ID, strings.ReplaceAll(strings.Join(has, " and "), "_", " "), c.Address, display.Escape(strings.Join(a.servers, ", ")), then)
}

// secretsReplaced says, for a volume want without secrets that Nomad has already and volctl
// did not hand over (registered there first, by `nomad volume register` or another tool), that
// a registration replaces the secrets of Nomad's copy with volctl's, none: Nomad's update takes
// the secrets sent, none included (Nomad 2.0.5 then sent the plugin none), and its answers
// never show a copy's secrets, so volctl cannot tell whether it had any. done: said after the
// registration. Empty for a volume with secrets (they are sent).
func secretsReplaced(want spec.Volume, done bool) string {
	if len(want.Secrets) > 0 {
		return ""
	}
	if done {
		return fmt.Sprintf("volume %q was registered in Nomad before volctl handed it over, and Nomad does not show its copy's secrets: the registration replaced them with volctl's, which are none, so if it had some, the plugin's calls for the volume now go without them; put them in volctl's volume (the secrets block of its spec, then `volctl volume register FILE`) and run `%s` again",
			want.ID, shellquote.Command("volctl nomad register", want.ID))
	}
	return fmt.Sprintf("volume %q is registered in Nomad already, not handed over by volctl, and Nomad does not show its copy's secrets: a registration would replace them with volctl's, which are none, so if it has some, the plugin's calls for the volume would go without them; put them in volctl's volume first (the secrets block of its spec, then `volctl volume register FILE`)",
		want.ID)
}

// notSaid is the start of erasingAnswer's note on a volume want with has (its secrets and
// mount flags) when Nomad at c did not say which versions its servers run.
func notSaid(want spec.Volume, has []string, c *nomad.Client) string {
	return fmt.Sprintf("volume %q has %s, which Nomad erases from its copy each time it sends the volume's event to a subscriber of its event stream when its servers run a version before 1.11.1 (1.10.7, 1.8.19 Enterprise; hashicorp/nomad#27176), and Nomad at %s did not say which versions its servers run",
		want.ID, strings.ReplaceAll(strings.Join(has, " and "), "_", " "), c.Address)
}

// note is what warning could not check (a token without node read, a question that failed), once per command: empty
// after the first call, and when there is nothing to say.
func (a *erasingAnswer) note() string {
	if a.noted {
		return ""
	}
	a.noted = a.unchecked != ""
	return a.unchecked
}

// attachedUnderClaims says how the volume's live local claims hold an attachment, for
// --dry-run to say what HandOver's check of it (engine attachedUnderClaims) would refuse: one
// recorded, or a plugin that attaches. Empty when they hold none.
func attachedUnderClaims(ctx context.Context, e *engine.Engine, info engine.VolumeInfo) string {
	if info.AttachedTo != "" {
		return fmt.Sprintf("is recorded as attached to node %q", info.AttachedTo)
	}
	ps, _ := e.Plugins(ctx) // the fingerprint recorded, as HandOver reads it
	for _, p := range ps {
		if p.ID == info.PluginID && slices.Contains(p.Capabilities.Controller, "PUBLISH_UNPUBLISH_VOLUME") {
			return fmt.Sprintf("its plugin %q attaches volumes", info.PluginID)
		}
	}
	return ""
}

// inNamespace names the Nomad namespace ns a volume goes to when it is not the one its spec
// names (specNS): NOMAD_NAMESPACE's, which takes the default one's place as for a job file
// that names none (nomad.Client's namespaceFor), so that whoever looks for the volume where
// its spec says knows where it is. Empty when ns is the spec's.
func inNamespace(specNS, ns string) string {
	if ns == specNS || specNS == "" && ns == spec.DefaultNamespace {
		return ""
	}
	return fmt.Sprintf(", in namespace %s (NOMAD_NAMESPACE's, in place of the default one its spec names)", display.Escape(ns))
}

// NomadReleaseOptions are the inputs of `volctl nomad release`.
type NomadReleaseOptions struct {
	IO     *iostreams.IOStreams
	Engine func(context.Context) (*engine.Engine, error)
	Nomad  func() (*nomad.Client, error)

	Volumes []string
	All     bool
	Force   bool
}

func newCmdNomadRelease(f *Factory, runF func(*NomadReleaseOptions) error) *cobra.Command {
	opts := &NomadReleaseOptions{IO: f.IO, Engine: f.Engine, Nomad: nomadClient}
	cmd := &cobra.Command{
		Use:   "release VOLUME... | --all",
		Short: "Take volumes back from Nomad after nomad volume deregister",
		Long: `Take volumes handed over to Nomad back, so volctl may claim them again. Deregister them in
Nomad first (nomad volume deregister ID, after stopping the jobs whose allocs claim them): a
volume Nomad still has is not taken back (exit 4), and the error says what to run there; nor
is one whose storage Nomad has under another ID or namespace (deregistered, then registered
again there: exit 4, naming it). Nomad is asked at the address, in the namespace and region the volume was handed over to;
with NOMAD_ADDR naming another cluster, the volume is not taken back. Nor is it after a
registration whose outcome Nomad did not say (no answer, or an error after which it may still
apply it), until Nomad answers one OK: volctl nomad register again settles it. Nor when the
cluster's leader, asked around the read, is named otherwise by two answers (more than one
cluster behind one address, a balancer's): see each cluster through its own servers. Nor when
the cluster answering names none of the servers the one it was handed to named at the handover
(a balancer that keeps a client on one cluster, since moved to another; or that cluster's
servers all replaced since), which a registration again is refused for too.
--force takes it back without asking Nomad (when the cluster is gone); two orchestrators must
never claim one volume at once, so be sure Nomad no longer uses it.

Nomad grows a volume it has through its plugin (a registration asking a larger capacity_min),
while volctl grows none handed over: once a volume is taken back, its plugin is asked what size
it has (ListVolumes, else ControllerGetVolume), and a larger one is recorded and said, the file
system owed its NodeExpandVolume (sent at the volume's next publish here). A plugin that cannot
say, or does not answer, leaves the take-back done, and a note names what records the size.`,
		Example: `  nomad volume deregister db && volctl nomad release db`,
		RunE:    runOpts(opts, idArgs(&opts.Volumes), runF, nomadReleaseRun),
	}
	cmd.Flags().BoolVar(&opts.All, "all", false, "take back every handed-over volume")
	cmd.Flags().BoolVar(&opts.Force, "force", false, "take volumes back without checking that Nomad no longer has them")
	return cmd
}

func nomadReleaseRun(ctx context.Context, opts *NomadReleaseOptions) error {
	e, err := opts.Engine(ctx)
	if err != nil {
		return err
	}
	ids := opts.Volumes
	switch {
	case opts.All && len(ids) > 0:
		return usageError("nomad release: --all takes back every handed-over volume; do not name volumes with it")
	case !opts.All && len(ids) == 0:
		return usageError("nomad release: name volumes, or --all")
	case opts.All:
		hs, err := e.Handovers(ctx, "")
		if err != nil {
			return err
		}
		for _, h := range hs {
			ids = append(ids, h.VolumeID)
		}
	}
	var c *nomad.Client
	if !opts.Force {
		if c, err = connectNomad(opts.Nomad); err != nil {
			return fmt.Errorf("nomad release: %w", err)
		}
	}
	unanswered := map[string]error{} // plugins whose size check failed in this command
	errs := askEach(ctx, c, ids, func(rest []string) string {
		switch {
		case opts.All && opts.Force:
			return "volctl nomad release --all --force"
		case opts.All:
			return "volctl nomad release --all"
		case opts.Force:
			return shellquote.CommandFlags("volctl nomad release", rest, "--force")
		}
		return shellquote.Command("volctl nomad release", rest...)
	}, func(id string) error {
		// Nomad is asked under the volume's lock, so a nomad register in progress finishes
		// (or fails) before the answer is taken as final.
		// The plugin is asked what size the volume has before the mark goes, and a larger one
		// recorded with its removal (engine.TakeBack): what is printed after is the
		// report of work done.
		var h engine.HandoverInfo
		r, err := e.TakeBack(ctx, id, func(m engine.HandoverInfo) (string, error) {
			h = m
			if opts.Force {
				return "forced, without asking Nomad", nil
			}
			return askedToTakeBack(ctx, e, c, m, opts.IO.ErrOut)
		}, func(plugin string) error {
			if failed, before := unanswered[plugin]; before {
				return fmt.Errorf("not asked: %w, for another volume of this command", failed)
			}
			return nil
		})
		if err != nil {
			return err
		}
		if !r.Had {
			fmt.Fprintf(opts.IO.ErrOut, "Volume %q is not handed over to Nomad: nothing to take back\n", id)
			return nil
		}
		if _, before := unanswered[r.PluginID]; !before && errors.Is(r.SizeErr, engine.ErrSizeNotAnswered) {
			unanswered[r.PluginID] = r.SizeErr // the plugin's, not this volume's own (its lock, its record)
		}
		if err := printDone(opts.IO.Out, fmt.Sprintf("Took volume %q back from %s; volctl may claim it again\n", id, h.Where()),
			"volume %q taken back from Nomad at %s", id, h.Address); err != nil {
			return err
		}
		return sizeAfterTakeBack(opts.IO, id, r.Size, r.SizeErr)
	})
	return manyFailed("nomad release", errs)
}

// sizeAfterTakeBack says what the take-back of volume id learnt of its size from its plugin
// (sc, or why nothing, err: engine.TakeBack), which it asked because Nomad expands a volume
// through the plugin for a registration asking a larger capacity_min while volctl refuses to:
// the record was left at the size handed over. A larger size was recorded; a plugin that cannot
// say, or did not answer, left the take-back done, and a note says that the record may be behind
// and what records the size. A plugin that could not be reached or did not answer is not asked
// again in the command (engine.ErrSizeNotAnswered, not a failure of the volume's own, such as
// its record): a plugin that hangs would hold each volume of a release --all for its RPCs'
// timeouts and retries.
func sizeAfterTakeBack(ios *iostreams.IOStreams, id string, sc engine.SizeCheck, err error) error {
	had := "volctl's record"
	if sc.Recorded > 0 {
		had += " of it (" + spec.FormatSize(sc.Recorded) + ")"
	}
	fix := fmt.Sprintf("if Nomad expanded it, %s is behind: `%s`, with the size Nomad expanded it to, records it (the plugin answers with the size it has)",
		had, shellquote.CommandFlags("volctl volume expand", []string{id}, "--size SIZE"))
	switch {
	case err == nil && sc.NotListed:
		// Deleted while in Nomad (`nomad volume delete` deletes the storage through the
		// plugin): the record is taken back, but a claim would fail NOT_FOUND. Before, the
		// release said only that volctl may claim it again
		// (TestNomadReleaseOfAVolumeDeletedInNomadSaysItsStorageIsGone).
		fmt.Fprintf(ios.ErrOut, "Warning: volume %q: its plugin no longer has its storage (%s does not list it): it was deleted while in Nomad (`nomad volume delete`?), "+
			"and a claim of it here would fail; if it is gone, `%s` forgets the record\n",
			id, sc.Asked, shellquote.Command("volctl volume deregister", id))
	case err != nil:
		fmt.Fprintf(ios.ErrOut, "Warning: volume %q: volctl could not learn from its plugin what size it has now (%s); %s\n", id, escapeLines(err.Error()), fix)
	case sc.CannotSay:
		fmt.Fprintf(ios.ErrOut, "Note: volume %q: its plugin cannot say what size a volume has (no LIST_VOLUMES or GET_VOLUME); %s\n", id, fix)
	case sc.Learnt:
		return printDone(ios.Out, fmt.Sprintf("Volume %q is %s as its plugin lists it: its size, not known before, is recorded now\n", id, spec.FormatSize(sc.Listed)),
			"volume %q recorded at %s", id, spec.FormatSize(sc.Listed))
	case sc.Grown:
		was := "none recorded"
		if sc.Recorded > 0 {
			was = "volctl had " + spec.FormatSize(sc.Recorded)
		}
		line := fmt.Sprintf("Volume %q is %s as its plugin lists it, grown while in Nomad (%s): recorded", id, spec.FormatSize(sc.Listed), was)
		if sc.ByOwnExpand {
			line = fmt.Sprintf("Volume %q is %s as its plugin lists it (%s), grown by the expansion to %s pending when it was handed over, or while in Nomad: recorded",
				id, spec.FormatSize(sc.Listed), was, spec.FormatSize(sc.Pending))
		}
		if sc.NodeOwed > 0 {
			// A handover again refuses an owed node expansion (Nomad never sends one for a
			// volume it did not expand): said now, with what finishes it, not at that handover.
			line += fmt.Sprintf("; its file system is grown to it (NodeExpandVolume) at its next publish here, or by `volctl reconcile` while it is staged here, "+
				"and a handover to Nomad again waits for that: %s, grows it (or hand it over with --force, its allocs getting the file system at its old size)",
				sc.PayWith)
		}
		return printDone(ios.Out, line+"\n", "volume %q recorded at %s", id, spec.FormatSize(sc.Listed))
	}
	return nil
}

// askedToTakeBack asks the Nomad the volume was handed over to whether it has let go of it:
// the reason to take it back when it has, else the error to report.
func askedToTakeBack(ctx context.Context, e *engine.Engine, c *nomad.Client, h engine.HandoverInfo, notes io.Writer) (string, error) {
	// Only the cluster the volume was handed to can say it has let go of it: any other
	// answers that it has no such volume.
	if !engine.SameNomadAddress(h.Address, c.Address) {
		return "", fmt.Errorf("volume %q is handed over to Nomad at %s, but NOMAD_ADDR says %s, which cannot say whether that cluster has let go of it: run `%s`%s (with that cluster's token), or --force if that cluster is gone and nothing uses the volume",
			h.VolumeID, h.Address, c.Address, h.NomadAddr()+" "+shellquote.Command("volctl nomad release", h.VolumeID), h.CredentialBack())
	}
	// Nomad's 404 is its word only from one cluster: the leader asked around the read
	// (nomad.Client.VolumeOfOneCluster), as the handover asks it around its registration.
	have, err := c.VolumeOfOneCluster(ctx, h.VolumeID, h.Namespace, h.Region, h.Peers)
	switch {
	case errors.Is(err, nomad.ErrOtherCluster):
		// Another cluster than the one the volume was handed to answers at that address (a
		// balancer that keeps a client on one cluster moved this one): its 404 says nothing of
		// the one that may still have it.
		return "", &exitError{code: ExitConflict, err: fmt.Errorf("%s; volume %q stays marked handed over, and volctl does not claim it. See `%s` against the servers of the cluster it was handed to (NOMAD_ADDR set to one of them, those named second above), and once that cluster has let go of it (`nomad volume deregister` there) or is gone, `%s` takes it back; `%s` again asks anew once the address reaches that cluster again",
			display.Escape(c.Hide(err.Error())), h.VolumeID, h.NomadCommand("volume status", h.VolumeID), shellquote.Command("volctl nomad release --force", h.VolumeID), shellquote.Command("volctl nomad release", h.VolumeID))}
	case errors.Is(err, nomad.ErrClustersCrossed):
		// Two clusters behind one balancer: the deregistration may have reached one and the
		// read the other, and the one the volume was handed to may still have it.
		return "", &exitError{code: ExitConflict, err: fmt.Errorf("%s; volume %q stays marked handed over, and volctl does not claim it: a release through that address cannot tell the clusters apart. See `%s` against each cluster's own servers (NOMAD_ADDR set to them), and once none has it (`nomad volume deregister` there), `%s` takes it back (after a leader election, `%s` again asks anew)",
			display.Escape(c.Hide(err.Error())), h.VolumeID, h.NomadCommand("volume status", h.VolumeID), shellquote.Command("volctl nomad release --force", h.VolumeID), shellquote.Command("volctl nomad release", h.VolumeID))}
	case err == nil:
		if info, verr := e.Volume(ctx, h.VolumeID); verr == nil {
			ns := h.Namespace
			if ns == "" { // a mark without one: asked in the namespace Nomad then used
				ns = have.Namespace
			}
			if d := nomad.IdentityIn(have, nomad.RegisterSpec(info), ns); len(d) > 0 {
				// Someone else's, registered under the ID since: deregistering it would take
				// their volume out of Nomad, and would not make this one any more free.
				unsettled := ""
				if h.Unsettled {
					unsettled = " once Nomad is done with the registration of it volctl sent, which ended without Nomad saying how (Nomad would apply it once that one is deregistered)"
				}
				return "", &exitError{code: ExitConflict, err: fmt.Errorf("volume %q: Nomad at %s has a volume by that ID in namespace %s that is another volume (%s): not this one, which Nomad does not hold under that ID any more (it refuses to change a volume's plugin or external ID); do not `nomad volume deregister` that one, which is someone else's. volctl takes a volume back only on Nomad's word that it has none by the ID: if nothing in Nomad uses this volume's storage, `%s` takes it back%s",
					h.VolumeID, c.Address, ns, display.Escape(c.Hide(strings.Join(d, ", "))), shellquote.Command("volctl nomad release --force", h.VolumeID), unsettled)}
			}
		}
		if h.Unsettled {
			// A deregistration now, as advised below, met the unsettled mark's refusal next:
			// the registration whose answer was lost may still be applied after it. Settled
			// first, the advice works in one go (TestNomadReleaseOfAnUnsettledHandoverNomadAppliedWorksAsAdvised).
			return "", &exitError{code: ExitConflict, err: fmt.Errorf("volume %q is still registered in %s (%d claim(s)), and a registration of it volctl sent ended without Nomad saying how, which Nomad may yet apply: "+
				"%s again settles it (Nomad answers it); then %s; volctl takes it back only once Nomad has let go of it",
				h.VolumeID, h.Where(), have.Claims(), h.RegisterAgain(), howToDeregister(h, have, c.Hide))}
		}
		return "", &exitError{code: ExitConflict, err: fmt.Errorf("volume %q is still registered in %s (%d claim(s)): %s; volctl takes it back only once Nomad has let go of it",
			h.VolumeID, h.Where(), have.Claims(), howToDeregister(h, have, c.Hide))}
	case !errors.Is(err, nomad.ErrNotFound):
		// Nomad electing a leader ("No cluster leader"), unreachable, or refusing the read: no
		// word either way, so the mark stays.
		return "", fmt.Errorf("%w; volume %q stays marked handed over: run `%s` again once Nomad answers (if the cluster is gone and nothing uses the volume, --force takes it back)", err, h.VolumeID,
			shellquote.Command("volctl nomad release", h.VolumeID))
	case nomad.IndexOf(err) < h.Index:
		// A state before the one Nomad answered the registration from: another server or
		// cluster, or one restored from an older snapshot, which never had the volume.
		return "", &exitError{code: ExitConflict, err: fmt.Errorf("volume %q: Nomad at %s says it has no such volume at index %d, from a state before the one it answered its registration from (index %d): not its word on it (another server or cluster answers at NOMAD_ADDR, or one restored from an older snapshot), so it stays marked handed over: see `%s` on the cluster it was handed over to, and run `%s` against it once it has let go of the volume; or, if that cluster is gone and nothing uses the volume, `%s`",
			h.VolumeID, c.Address, nomad.IndexOf(err), h.Index, h.NomadCommand("volume status", h.VolumeID),
			shellquote.Command("volctl nomad release", h.VolumeID), shellquote.Command("volctl nomad release --force", h.VolumeID))}
	case h.Unsettled:
		// Nomad may yet apply the registration whose outcome it did not say, after this 404:
		// the register path's rule (nomad.Client.HandOver), kept by the mark.
		return "", &exitError{code: ExitConflict, err: fmt.Errorf("volume %q: Nomad at %s says it has no such volume, but a registration of it volctl sent ended without Nomad saying how, and Nomad may yet apply it (it applies writes through its Raft log, and answers a read without waiting for one in flight), so it stays marked handed over: %s again settles it (Nomad answers it), then %s and `%s`; or, once you know Nomad is done with that request and nothing in it uses the volume, `%s`",
			h.VolumeID, c.Address, h.RegisterAgain(), nomadCmd(h, "volume deregister", h.VolumeID),
			shellquote.Command("volctl nomad release", h.VolumeID), shellquote.Command("volctl nomad release --force", h.VolumeID))}
	}
	// Nomad's 404 for the ID is no word that it let go of the storage: moved in Nomad to
	// another namespace or ID (deregistered, then registered again), it is still Nomad's, its
	// allocs free to claim it, and taken back volctl's claims would use it beside theirs. The
	// registration refuses such a twin (nomad.Client.Twins); so does the take-back
	// (TestNomadReleaseWhileNomadHasTheStorageAsAnotherVolumeIsRefused).
	info, err := e.Volume(ctx, h.VolumeID)
	if err != nil {
		return "", err
	}
	want := nomad.RegisterSpec(info)
	twins, err := c.TwinsIn(ctx, want, h.Namespace, h.Region)
	switch {
	case errors.Is(err, nomad.ErrPermissionDenied):
		fmt.Fprintf(notes, "Note: %s\n", escapeLines(c.TwinsUnchecked(want)))
	case err != nil:
		return "", fmt.Errorf("%w; volume %q stays marked handed over (volctl asks whether Nomad has its storage under another ID or namespace before it takes it back): run `%s` again once Nomad answers",
			err, h.VolumeID, shellquote.Command("volctl nomad release", h.VolumeID))
	case len(twins) > 0:
		return "", &exitError{code: ExitConflict, err: errors.New(display.Escape(c.TwinsTakeBackError(want, twins).Error()))}
	}
	return fmt.Sprintf("deregistered from Nomad at %s", c.Address), nil
}

// nomadCmd is a nomad CLI command, quoted, with the flags naming where the volume was handed
// over (only when there are any).
func nomadCmd(h engine.HandoverInfo, cmd, arg string) string {
	return "`" + h.NomadCommand(cmd, arg) + "`"
}

// howToDeregister says what to run so that Nomad lets go of a volume it has, in the namespace
// and region it was handed over to: Nomad refuses to deregister a volume its allocs claim,
// so those (and their jobs) come first. An alloc that has stopped keeps its claim until Nomad's
// unpublish of the volume from its node succeeds, which Nomad tries again by itself while the
// plugin refuses it (volctl's own refuses ControllerUnpublishVolume while the volume is still
// staged or published on the node): stopping its job does nothing, releasing the local claims
// that stage it does. Nomad's names of them go through hide (the credentials sent to it
// replaced: what answers for Nomad may echo them anywhere).
func howToDeregister(h engine.HandoverInfo, have nomad.VolumeState, hide func(string) string) string {
	deregister := "run " + nomadCmd(h, "volume deregister", h.VolumeID)
	var live, jobs, stopped []string
	for _, a := range have.Allocs {
		job := display.Escape(hide(a.JobID))
		name := fmt.Sprintf("%s (%.8s) of job %s", display.Escape(hide(a.Name)), display.Escape(hide(a.ID)), job)
		if a.Stopped() {
			stopped = append(stopped, fmt.Sprintf("%s has stopped (%s)", name, display.Escape(a.Status)))
			continue
		}
		live = append(live, name)
		if !slices.Contains(jobs, job) {
			jobs = append(jobs, job)
		}
	}
	var first []string
	if len(live) > 0 {
		stops := make([]string, len(jobs))
		for i, j := range jobs {
			stops[i] = nomadCmd(h, "job stop", j)
		}
		first = append(first, fmt.Sprintf("Nomad's allocs claim it: %s; Nomad deregisters no volume in use, so stop them first (%s)",
			strings.Join(live, ", "), strings.Join(stops, ", ")))
	}
	if unlisted := have.Claims() - len(have.Allocs); len(stopped) > 0 || unlisted > 0 {
		its := "its claim"
		if len(stopped) > 1 {
			its = "the claim of each"
		}
		if unlisted > 0 {
			stopped = append(stopped, fmt.Sprintf("%d claim(s) of allocs Nomad no longer lists", unlisted))
			its = "their claims"
		}
		first = append(first, fmt.Sprintf("%s, but Nomad holds %s until its unpublish of the volume from the alloc's node succeeds, which it tries again by itself while the plugin refuses it (volctl's own refuses ControllerUnpublishVolume while the volume is still staged or published there: release the local claims `%s` lists; %s shows Nomad's claims)",
			strings.Join(stopped, ", "), its, shellquote.Command("volctl volume status", h.VolumeID), nomadCmd(h, "volume status", h.VolumeID)))
	}
	if len(first) == 0 {
		return deregister + " first"
	}
	return strings.Join(first, "; ") + "; then " + deregister
}

// NomadStatusOptions are the inputs of `volctl nomad status`.
type NomadStatusOptions struct {
	IO     *iostreams.IOStreams
	Engine func(context.Context) (*engine.Engine, error)
	Nomad  func() (*nomad.Client, error)

	Volumes  []string
	Exporter exportFlags
}

// NomadVolumeStatus is one local volume beside its Nomad counterpart (docs/json.md).
type NomadVolumeStatus struct {
	ID           string               `json:"id"`
	PluginID     string               `json:"plugin_id"`
	LocalClaims  int                  `json:"local_claims"`
	HandedOver   bool                 `json:"handed_over"`
	Handover     *engine.HandoverInfo `json:"handover,omitempty"`
	Registered   bool                 `json:"registered"`
	Nomad        *nomad.VolumeState   `json:"nomad,omitempty"`
	NomadAddress string               `json:"nomad_address"`
	// NomadNamespace is the namespace Nomad was asked in: the handover's, else the one a
	// registration would use (nomad.Client's namespaceFor).
	NomadNamespace string `json:"nomad_namespace,omitempty"`
	// AnotherVolume: Nomad's volume of the ID is not this one (nomad.IdentityIn: another
	// plugin or external ID), so Registered is false; how it differs.
	AnotherVolume []string `json:"another_volume,omitempty"`
	// Differs names the fields Nomad's copy of this volume has otherwise than volctl's
	// (nomad.Differing): changed in Nomad since it was registered, or here.
	Differs []string `json:"differs,omitempty"`
	// Differences says, for each field of Differs, what Nomad's copy has and what volctl's
	// volume has (nomad.Differences).
	Differences []nomad.Difference `json:"differences,omitempty"`
	// NotCompared names what volctl's volume has that Nomad does not answer, so that Differs
	// cannot say whether Nomad's copy has the same (nomad.NotCompared).
	NotCompared []string `json:"not_compared,omitempty"`
	// Erasing says that Nomad's servers erase this volume's secrets and mount flags from its
	// copy at each event-stream event of it (erasingAnswer): what the register warns of, for a
	// volume registered there.
	Erasing string `json:"erasing,omitempty"`
	// Twins are the volumes Nomad has of this volume's storage (its plugin and external ID)
	// under another ID, or this ID in another namespace (nomad.Client.Twins): two Nomad
	// volumes of one storage, whose allocs Nomad lets use it at once.
	Twins []nomad.Twin `json:"twins,omitempty"`
	Error string       `json:"error,omitempty"`
	// notFoundIndex is the X-Nomad-Index of Nomad's 404 for the volume (nomad.IndexOf), for
	// handoverNote to tell Nomad's word that it was deregistered (at the mark's index or
	// after) from a state before its registration, on which release refuses.
	notFoundIndex uint64
}

func newCmdNomadStatus(f *Factory, runF func(*NomadStatusOptions) error) *cobra.Command {
	opts := &NomadStatusOptions{IO: f.IO, Engine: f.Engine, Nomad: nomadClient}
	cmd := &cobra.Command{
		Use:   "status [VOLUME...]",
		Short: "Show local volumes beside their Nomad counterparts",
		Long: `Show each local volume (or those named) beside Nomad's copy: handed over or not, registered
in Nomad or not, schedulable, the plugin's health there, and the allocs that claim it for
reading and for writing. A handed-over volume is looked up in the namespace and region of its
handover; any other where volctl nomad register would put it. A volume Nomad has by the same ID
with another plugin or external ID is another volume (IN NOMAD: another), and a note says how;
a warning names the volumes Nomad has of a volume's storage (its plugin and external ID) under
another ID or namespace, whose allocs Nomad lets use it at once;
a note names the fields Nomad's copy of this one has otherwise than volctl's, and those Nomad
would refuse to change, with what each side has. A volume marked handed over whose registration
Nomad did not settle (volctl interrupted, Nomad not answering it), or that Nomad no longer has
where it was handed over, gets a note saying so and what to run. It only reads: Nomad answers a read with a
copy of the volume, its secrets left out and its mount flags redacted, and keeps its own as
registered; a note says
which volumes' secrets or mount flags could not be compared so, and a warning which of them
Nomad's servers erase at each event-stream event of the volume (a version before 1.11.1).
The cluster's leader is asked twice in a row, and its servers, once per region: when more than
one cluster answers at NOMAD_ADDR (a balancer's), or a handed-over volume's cluster named other
servers at its handover, the row says so and is not read (exit 1).`,
		Example: `  volctl nomad status
  volctl nomad status db --json`,
		RunE: runOpts(opts, idArgs(&opts.Volumes), runF, nomadStatusRun),
	}
	addReadExportFlags[[]NomadVolumeStatus](cmd, &opts.Exporter, opts.IO)
	return cmd
}

func nomadStatusRun(ctx context.Context, opts *NomadStatusOptions) error {
	e, err := opts.Engine(ctx)
	if err != nil {
		return err
	}
	// A volume named that volctl does not have fails the command before Nomad is asked
	// anything: found only at its turn, it ended the command there, the rows of the volumes
	// asked about before it unprinted (--json's array included).
	for _, id := range opts.Volumes {
		if _, err := e.Volume(ctx, id); err != nil {
			return fmt.Errorf("nomad status: %w", err)
		}
	}
	c, err := connectNomad(opts.Nomad)
	if err != nil {
		return fmt.Errorf("nomad status: %w", err)
	}
	ids := opts.Volumes
	if len(ids) == 0 {
		vols, err := e.Volumes(ctx)
		if err != nil {
			return err
		}
		for _, v := range vols {
			ids = append(ids, v.ID)
		}
	}
	out := make([]NomadVolumeStatus, 0, len(ids))
	// What is read of volctl's own state, and the output, are not cut short by an interrupt:
	// only Nomad is asked no more. Read with the interrupted context, the first volume's row
	// ended the command with the read's "context canceled", no row printed, none named not asked
	// (TestNomadStatusOfManyInterruptedShowsEveryRow).
	local := context.WithoutCancel(ctx)
	var fails []error // each volume's: one kept, the others' rows said "error" with no why (TestNomadStatusNamesWhyEachVolumeFailed)
	var stopped, listFailed error
	unlisted := ""         // Nomad refused to list its volumes: the twins could not be looked for
	var unchecked []string // the volumes whose twins were not looked for: Nomad failed the list (listFailed)
	erasing := &erasingAnswer{}
	clusters := clusterAnswers{}
	for i, id := range ids {
		// Once Nomad leaves a request unanswered or answers it busy, the rest are shown
		// without asking it (as askEach does), each row saying so.
		why := stopAsking(ctx, c)
		if why != nil && stopped == nil {
			stopped = notAsked(ids[i:], why, func(rest []string) string {
				if len(opts.Volumes) == 0 {
					return "volctl nomad status"
				}
				return shellquote.Command("volctl nomad status", rest...)
			})
		}
		info, err := e.Volume(local, id)
		if err != nil {
			return fmt.Errorf("nomad status: %w", err)
		}
		st := NomadVolumeStatus{ID: info.ID, PluginID: info.PluginID, LocalClaims: len(info.Claims), NomadAddress: c.Address}
		if hs, err := e.Handovers(local, info.ID); err != nil {
			return fmt.Errorf("nomad status: %w", err)
		} else if len(hs) > 0 {
			st.HandedOver, st.Handover = true, &hs[0]
		}
		var have nomad.VolumeState
		want := nomad.RegisterSpec(info)
		// The cluster that answers at NOMAD_ADDR in the region the volume is read in, asked
		// once per region for the command (clusters): a read through an address more than one
		// cluster answers at, or of a volume handed to a cluster whose servers are none of
		// those answering now, is no cluster's word on it.
		var cl clusterAnswer
		if h := st.Handover; why == nil && (h == nil || engine.SameNomadAddress(h.Address, c.Address)) {
			region := c.Region
			if h != nil {
				region = h.Region
			}
			cl = clusters.of(ctx, c, region)
		}
		switch h := st.Handover; {
		case why != nil:
			err = fmt.Errorf("volume %q: not asked: %w", info.ID, why)
		case h != nil && !engine.SameNomadAddress(h.Address, c.Address):
			// Another cluster would say it has no such volume: not asked.
			err = fmt.Errorf("volume %q is handed over to Nomad at %s, but NOMAD_ADDR says %s: `%s`%s asks that cluster",
				info.ID, h.Address, c.Address, h.NomadAddr()+" "+shellquote.Command("volctl nomad status", info.ID), h.CredentialBack())
		case cl.err != nil:
			err = fmt.Errorf("volume %q: %w", info.ID, cl.err)
		case cl.Crossed != "" && h != nil:
			st.NomadNamespace = cmp.Or(h.Namespace, spec.DefaultNamespace)
			err = c.CrossedRead(info.ID, st.NomadNamespace, h.Region, cl.Crossed, "would answer the read, nor whether the one it was handed to still has it")
		case cl.Crossed != "":
			st.NomadNamespace = c.APIVolume(want).Namespace
			err = c.CrossedRead(info.ID, st.NomadNamespace, c.Region, cl.Crossed, "would answer the read")
		case h != nil && nomad.OtherCluster(h.Peers, cl.Peers):
			st.NomadNamespace = cmp.Or(h.Namespace, spec.DefaultNamespace)
			err = c.OtherClusterRead(info.ID, st.NomadNamespace, h.Region, h.Peers, cl.Peers, "what it answers of the volume is not the word of the cluster it was handed to: not asked")
		case h != nil: // where it was registered, whatever NOMAD_NAMESPACE says now
			st.NomadNamespace = cmp.Or(h.Namespace, spec.DefaultNamespace) // none recorded: Nomad's default one
			have, err = c.VolumeIn(ctx, info.ID, h.Namespace, h.Region)
		default:
			st.NomadNamespace = c.APIVolume(want).Namespace
			have, err = c.VolumeIn(ctx, info.ID, st.NomadNamespace, c.Region)
		}
		if st.NomadNamespace != "" && stopAsking(ctx, c) == nil && cl.Crossed == "" && (err == nil || !errors.Is(err, nomad.ErrOtherCluster)) {
			// Nomad's volumes of its storage under other IDs or namespaces, in the region
			// it was asked in (listed once for the command): what register refuses to make,
			// made by hand or by another volctl.
			region := c.Region
			if h := st.Handover; h != nil {
				region = h.Region
			}
			var twins []nomad.Twin
			terr := listFailed // Nomad failed the list in this command: not asked again for each volume
			if terr == nil {
				twins, terr = c.TwinsIn(ctx, want, st.NomadNamespace, region)
			}
			switch {
			case errors.Is(terr, nomad.ErrPermissionDenied):
				unlisted = c.TwinsUnchecked(want)
			case terr != nil:
				// Nomad's error, asked once for the command (the list is not asked again
				// once failed): a note naming every volume left unchecked, not the
				// failure of the first.
				listFailed = cmp.Or(listFailed, terr)
				unchecked = append(unchecked, info.ID)
			}
			st.Twins = twins
		}
		switch {
		case err == nil:
			// Nomad's volume of the ID may be someone else's (another volctl host's, one
			// registered over it since): not this volume in Nomad, nor are its allocs claims
			// of this one.
			st.Nomad = &have
			if st.AnotherVolume = nomad.IdentityIn(have, want, st.NomadNamespace); len(st.AnotherVolume) == 0 {
				st.Registered, st.Differs = true, nomad.Differing(have, info)
				if len(st.Differs) > 0 {
					st.Differences = nomad.Differences(have, info, st.Differs)
				}
				st.NotCompared = nomad.NotCompared(want)
				st.Erasing = erasing.warning(ctx, c, want, "then run `"+shellquote.Command("volctl nomad register", info.ID)+"` again")
			}
		case errors.Is(err, nomad.ErrNotFound):
			st.notFoundIndex = nomad.IndexOf(err)
		case why != nil:
			st.Error = err.Error()
		default:
			st.Error = err.Error()
			fails = append(fails, err)
		}
		out = append(out, st)
	}
	failed := errors.Join(errors.Join(fails...), stopped)
	// Nomad's copy holds what the plugin told Nomad (its version, the volume's context), and
	// Nomad's errors what it was sent: no secret volctl knows is shown from either, nor the
	// credentials sent to Nomad, which what answers for it may echo anywhere.
	// volctl's own identifiers (each volume's ID, its plugin's, where it is registered), and
	// Nomad's copy's ID and plugin ID where they are the volume's own, are shown as every
	// other command shows them, even where one is also a credential sent to Nomad: kept by
	// their fields, not their value (redactOutputKeeping), so that the same string elsewhere in
	// Nomad's answer (a context value under a key naming the password) is still hidden.
	var keep []*string
	for i := range out {
		s := &out[i]
		keep = append(keep, &s.ID, &s.PluginID, &s.NomadNamespace)
		if h := s.Handover; h != nil {
			keep = append(keep, &h.VolumeID, &h.Namespace, &h.Region)
		}
		if n := s.Nomad; n != nil {
			if n.ID == s.ID {
				keep = append(keep, &n.ID)
			}
			if n.PluginID == s.PluginID {
				keep = append(keep, &n.PluginID)
			}
		}
	}
	if err := redactNomadOutput(local, e, c, keep, &out); err != nil {
		return fmt.Errorf("nomad status: %w", err)
	}
	if opts.Exporter.Enabled() {
		// Through the command's context while no interrupt came: one that comes while a --jq
		// or -t filter runs stops it, as every command's (TestNomadStatusJQFilterStopsAtCtrlC);
		// after one that stopped the asking, the rows are printed all the same.
		wctx := ctx
		if ctx.Err() != nil {
			wctx = local
		}
		if err := opts.Exporter.Write(wctx, opts.IO.Out, out); err != nil {
			return err
		}
	} else {
		// Nomad's answer (its plugin's description, alloc names) is shown as table cells are.
		tw := newTable(opts.IO.Out, "VOLUME", "LOCAL CLAIMS", "HANDED OVER", "IN NOMAD", "SCHEDULABLE", "PLUGIN", "READ ALLOCS", "WRITE ALLOCS")
		for _, s := range out {
			reg, sched, plugin, reads, writes := "no", "-", "-", "-", "-"
			if s.Error != "" {
				reg = "error"
			}
			if n := s.Nomad; n != nil && s.Registered {
				reg, sched, plugin = "yes", yesNo(n.Schedulable), n.Plugin.Describe()
				reads, writes = allocNames(n, "read"), allocNames(n, "write")
			} else if n != nil {
				reg = "another"
			}
			tw.row(s.ID, strconv.Itoa(s.LocalClaims), yesNo(s.HandedOver), reg, sched, plugin, reads, writes)
		}
		if err := tw.render(); err != nil {
			return err
		}
		for _, s := range out {
			if note := nomadStatusNote(s); note != "" {
				fmt.Fprintf(opts.IO.ErrOut, "Note: %s\n", note)
			}
			if note := handoverNote(s); note != "" {
				fmt.Fprintf(opts.IO.ErrOut, "Note: %s\n", note)
			}
			if s.Erasing != "" {
				fmt.Fprintf(opts.IO.ErrOut, "Warning: %s\n", s.Erasing)
			}
			if len(s.Twins) > 0 {
				region := c.Region
				if s.Handover != nil {
					region = s.Handover.Region
				}
				fmt.Fprintf(opts.IO.ErrOut, "Warning: %s\n", twinsNote(s, region))
			}
			if len(s.NotCompared) > 0 {
				fmt.Fprintf(opts.IO.ErrOut, "Note: volume %q: Nomad does not answer a volume's %s, so volctl's are not compared with its copy's: `%s` sends them again\n",
					s.ID, strings.ReplaceAll(strings.Join(s.NotCompared, " or "), "_", " "), shellquote.Command("volctl nomad register", s.ID))
			}
		}
	}
	// These notes have no field in --json's objects: they go to stderr with it too, as
	// register --dry-run's do; the erasing one once, not once per volume (with --json it was
	// not said, an absent `erasing` read as "not erased":
	// TestNomadStatusJSONSaysItCouldNotTellWhetherNomadErasesSecrets).
	if n := erasing.note(); n != "" {
		fmt.Fprintf(opts.IO.ErrOut, "Note: %s\n", n)
	}
	if unlisted != "" {
		fmt.Fprintf(opts.IO.ErrOut, "Note: %s\n", escapeLines(c.Hide(scrubbedNote(local, e, c, unlisted))))
	}
	if len(unchecked) > 0 {
		fmt.Fprintf(opts.IO.ErrOut, "Note: %s: not checked for twins (Nomad's volumes of the same storage under another ID or namespace), Nomad failed the list of its volumes: %s; run `volctl nomad status` again once it lists them\n",
			namedVolumes(unchecked), escapeLines(c.Hide(listFailed.Error())))
	}
	if failed != nil {
		return fmt.Errorf("nomad status: %w", failed)
	}
	return nil
}

// twinsNote warns that Nomad has volume s's storage as other volumes too (s.Twins): their
// allocs and this volume's may use it at once, and a deregister of one takes it from the
// others, in region (where they were listed). Nomad's IDs and namespaces are escaped, as table
// cells are.
func twinsNote(s NomadVolumeStatus, region string) string {
	names := make([]string, len(s.Twins))
	for i, t := range s.Twins {
		names[i] = fmt.Sprintf("volume %q in namespace %s", t.ID, t.Namespace)
	}
	t := s.Twins[0]
	return display.Escape(fmt.Sprintf("volume %q: Nomad at %s has its storage (plugin %q, the same external ID) as another volume too: %s; Nomad's access modes hold per volume, so their allocs may use it at once, and deregistering or deleting one takes it from the others: `%s` if that one is no one's",
		s.ID, s.NomadAddress, s.PluginID, strings.Join(names, ", "), engine.HandoverInfo{Namespace: t.Namespace, Region: region}.NomadCommand("volume deregister", t.ID)))
}

// nomadStatusNote says, under the table, what its cells cannot: that Nomad's volume of the ID
// is another one, and how; or which fields Nomad's copy of this one has otherwise. Empty when
// there is nothing to say.
func nomadStatusNote(s NomadVolumeStatus) string {
	switch {
	case len(s.AnotherVolume) > 0:
		return fmt.Sprintf("volume %q: Nomad at %s has a volume by that ID in namespace %s that is another volume (%s): not this one, nor are its allocs claims of this one",
			s.ID, s.NomadAddress, display.Escape(s.NomadNamespace), display.Escape(strings.Join(s.AnotherVolume, ", ")))
	case len(s.Differs) > 0:
		return fmt.Sprintf("volume %q: Nomad's copy in namespace %s differs from volctl's in %s (changed in Nomad since it was registered, or here): %s; Nomad serves its own; `%s` shows what registering volctl's would change",
			s.ID, display.Escape(s.NomadNamespace), strings.Join(s.Differs, ", "), display.Escape(differenceWords(s.Differences)), shellquote.Command("volctl nomad register --dry-run", s.ID))
	}
	return ""
}

// handoverNote says, under the table, where a volume marked handed over is when its cells
// ("HANDED OVER yes") cannot: its registration unsettled, so Nomad may have it or yet apply
// it, and what settles that; or settled, and Nomad, asked where it was handed over, has no
// volume by its ID (its own 404 at the mark's index or after): deregistered there since, and
// what takes it back; a 404 from a state before the registration (notFoundIndex below the
// mark's index): what release says of it, which refuses to take the volume back. Empty for a
// mark of another address than NOMAD_ADDR's (the row's error says how to ask there), and
// otherwise (not marked, in Nomad as handed over, or Nomad not asked: the row's error says
// why). Before, a row "yes, no" said neither, where register, release and `volctl volume
// status` do.
func handoverNote(s NomadVolumeStatus) string {
	h := s.Handover
	switch {
	case h == nil, !engine.SameNomadAddress(h.Address, s.NomadAddress):
		// Handed over to another cluster than NOMAD_ADDR's: the row's error says so, and
		// how to ask that one; advice to run a command here would act on this one.
		return ""
	case h.Unsettled:
		return display.Escape(fmt.Sprintf("volume %q is marked handed over to %s, but %s", s.ID, h.Where(), h.UnsettledWhy()))
	case s.Nomad == nil && s.Error == "" && s.notFoundIndex < h.Index:
		// What `volctl nomad release` says of that 404: it refuses to take the volume back.
		return display.Escape(fmt.Sprintf("volume %q is marked handed over to %s, but Nomad at %s says it has no volume %q in namespace %s at index %d, from a state before the one it answered its registration from (index %d): "+
			"not its word on it (another server or cluster answers at NOMAD_ADDR, or one restored from an older snapshot), and `%s` refuses to take it back on it: see `%s` on the cluster it was handed over to",
			s.ID, h.Where(), s.NomadAddress, s.ID, s.NomadNamespace, s.notFoundIndex, h.Index, shellquote.Command("volctl nomad release", s.ID), h.NomadCommand("volume status", s.ID)))
	case s.Nomad == nil && s.Error == "" && len(s.Twins) > 0:
		// Nomad has its storage as another volume (twinsNote warns of it): release and register
		// both refuse it while it does, so neither is advised until that one is gone. Before,
		// the note said each of them works (TestStatusNoteOfATwinAdvisesNoCommandThatIsRefused).
		t := s.Twins[0]
		return display.Escape(fmt.Sprintf("volume %q is marked handed over to %s, but Nomad has no volume %q in namespace %s: it was deregistered there since, and Nomad has its storage as volume %q in namespace %s, "+
			"so `%s` and `%s` refuse it: once that volume is no one's (`%s`), either takes it back or hands it over again",
			s.ID, h.Where(), s.ID, s.NomadNamespace, t.ID, t.Namespace, shellquote.Command("volctl nomad release", s.ID), shellquote.Command("volctl nomad register", s.ID),
			engine.HandoverInfo{Namespace: t.Namespace, Region: h.Region}.NomadCommand("volume deregister", t.ID)))
	case s.Nomad == nil && s.Error == "":
		return display.Escape(fmt.Sprintf("volume %q is marked handed over to %s, but Nomad has no volume %q in namespace %s: it was deregistered there since (`nomad volume deregister`, or another tool); `%s` takes it back, or `%s` hands it over again",
			s.ID, h.Where(), s.ID, s.NomadNamespace, shellquote.Command("volctl nomad release", s.ID), shellquote.Command("volctl nomad register", s.ID)))
	}
	return ""
}

// differenceWords says field by field what Nomad's copy and volctl's volume have:
// "capacity: Nomad's min 1GiB, max none; volctl's min 10MiB, max none", joined by " | ".
func differenceWords(ds []nomad.Difference) string {
	parts := make([]string, len(ds))
	for i, d := range ds {
		parts[i] = fmt.Sprintf("%s: Nomad's %s; volctl's %s", d.Field, d.Nomad, d.Volctl)
	}
	return strings.Join(parts, " | ")
}

func yesNo(b bool) string {
	if b {
		return "yes"
	}
	return "no"
}

func orDash(s string) string {
	if s == "" {
		return "-"
	}
	return s
}

// allocNames lists the allocs claiming a volume in one mode by name and short ID, as
// nomad alloc status shows them: web.web[0] (1b80f67e).
func allocNames(v *nomad.VolumeState, mode string) string {
	var parts []string
	for _, a := range v.Allocs {
		if a.Mode == mode {
			parts = append(parts, fmt.Sprintf("%s (%.8s)", a.Name, a.ID))
		}
	}
	return orDash(strings.Join(parts, ", "))
}

// clusterAnswer is what a command that only reads learnt of the cluster answering in a region
// (nomad.Client.OneCluster), or why it could not.
type clusterAnswer struct {
	nomad.Cluster
	err error
}

// clusterAnswers are a command's clusterAnswer per region, each asked once: three requests
// per region, not per volume.
type clusterAnswers map[string]clusterAnswer

func (cs clusterAnswers) of(ctx context.Context, c *nomad.Client, region string) clusterAnswer {
	if a, ok := cs[region]; ok {
		return a
	}
	cl, err := c.OneCluster(ctx, region)
	a := clusterAnswer{Cluster: cl, err: err}
	cs[region] = a
	return a
}
