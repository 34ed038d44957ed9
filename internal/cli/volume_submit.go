package cli

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"

	"github.com/spf13/cobra"

	"github.com/volctl/volctl/internal/display"
	"github.com/volctl/volctl/internal/engine"
	"github.com/volctl/volctl/internal/iostreams"
	"github.com/volctl/volctl/internal/spec"
)

// VolumeSubmitOptions are the inputs of `volctl volume register` and `volctl volume create`
// (and of the top-level register and create, which are the same commands): volume spec files
// checked for Verb, then handed to the engine one by one.
type VolumeSubmitOptions struct {
	IO       *iostreams.IOStreams
	Engine   func(context.Context) (*engine.Engine, error)
	ReadFile func(string) ([]byte, error)

	Verb     spec.Verb // register or create
	Files    []string  // "-" is standard input
	Exporter exportFlags
}

// newCmdVolumeSubmit builds a register or create command; the volume and top-level forms
// differ only in their short help.
func newCmdVolumeSubmit(f *Factory, verb spec.Verb, short string, runF func(*VolumeSubmitOptions) error) *cobra.Command {
	opts := &VolumeSubmitOptions{IO: f.IO, Engine: f.Engine, Verb: verb}
	cmd := &cobra.Command{
		Use:   string(verb) + " FILE... | -",
		Short: short,
		Args:  minimumArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			if err := checkSpecArgs(args); err != nil {
				return err
			}
			opts.Files = args
			if runF != nil {
				return runF(opts)
			}
			return volumeSubmitRun(cmd.Context(), opts)
		},
	}
	switch verb {
	case spec.VerbRegister:
		cmd.Long = `Register volumes that already exist at their storage provider, from volume spec files (Nomad's
format, HCL or JSON; - reads standard input). Each spec needs external_id, the provider's ID
for the volume. The volume's plugin must be registered and reachable; a plugin with a
controller service must confirm the volume's capabilities (ValidateVolumeCapabilities).

Registering an ID again updates the volume as Nomad does: capabilities, mount options,
secrets and context may change and capacity may grow, but name, external_id, plugin_id,
parameters and topology cannot (exit 4; deregister and register it again to change them).

Every file is checked before any volume is registered: an invalid one registers nothing
(exit 2, with every problem shown), and so does one that cannot be read (exit 1) or is no spec at all
(binary, UTF-16, over 1 MiB, a directory: exit 2). A volume that fails to register does not stop the others.
Files of more than 32 MiB together are refused, unread past that (exit 2): give them in
several commands.`
		cmd.Example = `  volctl volume register db.hcl
  volctl register db.hcl cache.hcl --json
  nomad-render db | volctl volume register -`
	case spec.VerbCreate:
		cmd.Long = `Create volumes through their plugin (CreateVolume), from volume spec files (Nomad's format,
HCL or JSON; - reads standard input), and register them. The plugin must be registered,
reachable and able to create volumes (CREATE_DELETE_VOLUME). snapshot_id restores a snapshot
(refused, exit 4, while the plugin says it is not ready to use: still processing it),
clone_id copies another volume (a volctl volume ID or the provider's).

Creating an existing volume with the same spec changes nothing and says "unchanged" (a larger
capacity_min grows it; of a volume with no size recorded, its plugin is asked its size first
where it can list it, and says whether it was grown); changing name, plugin_id, parameters, topology, snapshot_id or clone_id is refused (exit 4).
So is changing capabilities, mount_options or secrets, which a create does not apply: volume
register of the spec with the volume's external_id (and no snapshot_id, clone_id or preferred
topology) does.
A create interrupted by a crash is finished by the same create or by volctl reconcile, never
by creating a second volume.

Every file is checked before any volume is created: an invalid one creates nothing (exit 2,
with every problem shown), and so does one that cannot be read (exit 1) or is no spec at all
(binary, UTF-16, over 1 MiB, a directory: exit 2). A volume that fails to create does not stop the others.
Files of more than 32 MiB together are refused, unread past that (exit 2): give them in
several commands.`
		cmd.Example = `  volctl volume create db.hcl
  volctl create db.hcl -t '{{range .}}{{.id}} {{.external_id}}{{"\n"}}{{end}}'`
	}
	addActingExportFlags[[]engine.VolumeInfo](cmd, &opts.Exporter, opts.IO)
	return cmd
}

// volumeSubmitRun parses and checks every file, then registers or creates each volume.
func volumeSubmitRun(ctx context.Context, opts *VolumeSubmitOptions) error {
	command := "volume " + string(opts.Verb)
	vols, err := parseVolumeSpecs(ctx, opts, command)
	if err != nil {
		return err
	}
	e, err := opts.Engine(ctx)
	if err != nil {
		return err
	}
	out := bufio.NewWriter(opts.IO.Out)
	defer out.Flush()
	infos := make([]engine.VolumeInfo, 0, len(vols))
	outcomes := make([]engine.SubmitOutcome, 0, len(vols)) // infos' outcomes, as the engine words them
	var errs []error
	var untried []string // the volumes an interrupt left before anything was sent for them
	for i, v := range vols {
		var info engine.VolumeInfo
		var outcome engine.SubmitOutcome
		pctx, done := startProgress(ctx, opts.IO, opts.Exporter.Enabled())
		var reg engine.Registration
		if opts.Verb == spec.VerbCreate {
			info, outcome, err = e.CreateVolumeOutcome(pctx, *v)
		} else {
			info, reg, err = e.RegisterVolumeOutcome(pctx, *v)
			outcome = reg.Outcome
		}
		done()
		if err != nil && info.ID != "" && opts.Exporter.Enabled() {
			// Recorded despite the error (a registration whose node step failed, its storage
			// grown): in the list --json prints, as the record stands
			// (TestRegistrationRecordedDespiteItsNodeStepIsInItsJSON).
			infos = append(infos, info)
			outcomes = append(outcomes, outcome)
		}
		if err != nil {
			errs = append(errs, err)
			if len(vols) > 1 {
				// Say it now, in order with the successes; the summary comes at the end.
				// Scrubbed as the summary error is (Factory.RedactError), and of the files'
				// secrets too: a plugin that echoed a secret into what the error words (the
				// external ID it answered) had it printed here in full
				// (TestMultiFileCreateFailureLineIsScrubbed).
				msg := err.Error()
				if rerr := redactOutput(ctx, e, specSecrets(vols), &msg); rerr != nil {
					msg = fmt.Sprintf("volume %q: %v", v.ID, rerr)
				}
				out.Flush()
				fmt.Fprintf(opts.IO.ErrOut, "Error: %s\n", escapeLines(msg))
			}
			if ctx.Err() != nil {
				for _, rest := range vols[i+1:] {
					untried = append(untried, rest.ID)
				}
				break
			}
			continue
		}
		infos = append(infos, info)
		outcomes = append(outcomes, outcome)
		if !opts.Exporter.Enabled() {
			line := volumeSubmittedLine(opts.Verb, info, outcome, reg.Changed)
			if err := redactOutput(ctx, e, nil, &line); err != nil {
				return fmt.Errorf("%s: %w", command, err)
			}
			fmt.Fprintln(out, display.Escape(line))
		}
		if h := info.Handover; h != nil && outcome != engine.Unchanged && opts.Verb == spec.VerbRegister {
			// Handed over, the volume is Nomad's to use: this changed volctl's record, not
			// Nomad's copy, and "updated" alone read as both
			// (TestRegisterAgainOfAHandedOverVolumeSaysNomadsCopyIsUnchanged).
			// The mark's own command, with its NOMAD_* settings: one built here named no region
			// or namespace, and was refused as a handover elsewhere
			// (TestHandedOverRegisterWarningAdviceRunsWhereTheVolumeWasHandedOver).
			warning := fmt.Sprintf("Warning: volume %q is handed over to %s: this registration changed volctl's record only, not Nomad's copy; "+
				"%s sends it there", info.ID, h.Where(), h.RegisterAgain())
			if err := redactOutput(ctx, e, nil, &warning); err != nil {
				return fmt.Errorf("%s: %w", command, err)
			}
			out.Flush()
			fmt.Fprintln(opts.IO.ErrOut, escapeLines(warning))
		}
		if sch := info.Schedulability(); sch.Why == engine.OutsideTopology {
			// Made or registered, and no claim of it is admitted here: said now, not at the
			// first claim (TestVolumeOutsideItsPluginsTopologyIsNotSchedulable).
			warning := fmt.Sprintf("Warning: volume %q: %s", info.ID, sch.Sentence())
			if err := redactOutput(ctx, e, nil, &warning); err != nil {
				return fmt.Errorf("%s: %w", command, err)
			}
			out.Flush()
			fmt.Fprintln(opts.IO.ErrOut, escapeLines(warning))
		}
	}
	var failed error
	switch {
	case len(errs) == 0:
	case len(vols) == 1:
		// Scrubbed of the spec's secrets as the multi-file line is: a refusal before the volume
		// is recorded (a restore's check answered about another snapshot, whose ID the plugin
		// made of the secret it was sent) words what the plugin gave, and Factory.RedactError
		// knows only the state's secrets (TestRestoreCheckAnsweredAboutAnotherSnapshotShowsNoSpecSecret).
		failed = errs[0]
		msg := failed.Error()
		if rerr := redactOutput(ctx, e, specSecrets(vols), &msg); rerr != nil {
			failed = &redactedError{err: failed, msg: fmt.Sprintf("volume %q: %v", vols[0].ID, rerr)}
		} else if msg != failed.Error() {
			failed = &redactedError{err: failed, msg: msg}
		}
	default:
		// Each failure is on stderr already; the exit code is the first one's. The volumes
		// an interrupt left untried are named: "1 of 3 volumes failed" of an interrupted
		// create read as the third made, never tried and nowhere named
		// (TestInterruptedMultiVolumeCreateNamesTheVolumesNotTried).
		summary := fmt.Errorf("%s: %d of %d volumes failed (see above)", command, len(errs), len(vols))
		if len(untried) > 0 {
			summary = fmt.Errorf("%s: %d of %d volumes not %s: %d failed (see above), and %s not tried, the command interrupted before them",
				command, len(errs)+len(untried), len(vols), pastTense(opts.Verb), len(errs), quotedIDs(untried))
		}
		failed = withCode(ExitCode(errs[0]), summary)
	}
	var printErr error
	if opts.Exporter.Enabled() {
		if err := redactOutput(ctx, e, nil, &infos); err != nil {
			return fmt.Errorf("%s: %w", command, err)
		}
		printErr = opts.Exporter.Write(ctx, out, infos)
	}
	// The lines too: unprinted (a reader gone, a full disk), the volumes made, it exited 0, or 1
	// saying only that stdout failed (TestActingCommandsSayWhatTheyDidWhenTheirResultIsLost).
	flush(out, &printErr)
	if printErr != nil && len(infos) > 0 {
		// A filter or template stopped by the interrupt that also ended a create: the
		// error says what was done and what failed, never that an empty list was done.
		// Each volume worded by what was done to it: "volume "a" created" was said of one
		// found unchanged, nothing sent (TestCreateAgainUnchangedWhoseFilterFailsIsNotSaidCreated);
		// with nothing done to any, a failing filter is a usage error, exit 2, as a release's
		// that released nothing is.
		var did []string
		nothing := true
		for i, info := range infos {
			word := pastTense(opts.Verb)
			switch outcomes[i] {
			case engine.Unchanged:
				word = "unchanged"
			case engine.Updated:
				word = "updated"
			case engine.Expanded, engine.Sized:
				word = "expanded"
			case engine.Measured, engine.AtLeastSource:
				word = "not grown, its capacity_min recorded"
			}
			nothing = nothing && outcomes[i] == engine.Unchanged
			did = append(did, fmt.Sprintf("volume %s %s", shownQ(info.ID), word))
		}
		if nothing && failed == nil {
			return printErr
		}
		err := afterDone(printErr, "%s", strings.Join(did, ", "))
		if failed == nil {
			return err
		}
		return withCode(ExitCode(failed), errors.Join(failed, err))
	}
	return failed
}

// specSecrets lists the values of the secrets the specs give.
func specSecrets(vols []*spec.Volume) []string {
	var out []string
	for _, v := range vols {
		for _, s := range v.Secrets {
			out = append(out, s)
		}
	}
	return out
}

// parseVolumeSpecs reads and checks every file before anything is done with any, rendering
// diagnostics as validate does. Two files declaring the same ID are refused too.
func parseVolumeSpecs(ctx context.Context, opts *VolumeSubmitOptions, command string) ([]*spec.Volume, error) {
	sources, err := readSpecSources(ctx, opts.IO, opts.ReadFile, opts.Files)
	if err != nil {
		return nil, unreadSpecs(command, pastTense(opts.Verb), opts.Files, err)
	}
	var (
		vols    []*spec.Volume
		invalid int
	)
	seen := declarations{}
	for _, s := range sources {
		parser := spec.NewParser() // one a file: a parser keeps every file it parsed
		v, diags := parser.ParseVolume(s.Name, s.Src, opts.Verb)
		diags = append(diags, exposedSecrets(s, heldSecrets(v, nil, nil))...)
		if err := writeSpecDiagnostics(opts.IO, parser, diags); err != nil {
			return nil, err
		}
		if diags.HasErrors() {
			invalid++
			continue
		}
		for _, secret := range v.Secrets {
			noteSecrets(secret)
		}
		if v.MountOptions != nil {
			noteSecrets(v.MountOptions.MountFlags...)
			for _, flag := range v.MountOptions.MountFlags {
				noteSecrets(spec.MountFlagSecrets(flag)...)
			}
		}
		if first, dup := seen.add("volume", v.ID, s.Name); dup {
			return nil, usageError("%s: volume %q is declared in both %s and %s; nothing was %s", command, v.ID, first, s.Name, pastTense(opts.Verb))
		}
		vols = append(vols, v)
	}
	if invalid > 0 {
		return nil, invalidSpecs(command, pastTense(opts.Verb), invalid, len(sources))
	}
	return vols, nil
}

func pastTense(verb spec.Verb) string {
	if verb == spec.VerbCreate {
		return "created"
	}
	return "registered"
}

// grownWords says what a create or registration that asked the plugin for the spec's
// capacity_min did: grew the volume, or, its size not known before, made sure it has that much
// (engine.Sized: it may have had it already; engine.Measured: it had; neither is said to be
// expanded).
var grownWords = map[engine.SubmitOutcome]string{
	engine.Expanded: "expanded to the spec's capacity_min",
	engine.Sized:    "its size, not known before, is at least the spec's capacity_min now, which it may have had already",
	engine.Measured: "its plugin lists it at the spec's capacity_min or more, so it was not grown; its size, not known before, is recorded now",
	// Not Measured's words: nothing listed it, and no size is recorded
	// (TestCreateAgainOfAnUnlistedRestoreHadAlreadySaysNoListing).
	engine.AtLeastSource: "its snapshot's recorded size is at least the spec's capacity_min, so it was not grown (its plugin cannot list it, and its size is still not known)",
}

// volumeSubmittedLine is `Volume "db" registered` or
// `Volume "db" created (external ID "vol-1", 1.0 GiB)`; a create or registration that found
// the volume made or registered (outcome, the engine's word: only it, under the volume's lock,
// can tell) says "unchanged", or "expanded" when the spec's capacity_min grew it (grownWords),
// and a registration that changed it "updated", naming what changed.
func volumeSubmittedLine(verb spec.Verb, v engine.VolumeInfo, outcome engine.SubmitOutcome, changed []string) string {
	if verb != spec.VerbCreate {
		switch outcome {
		case engine.Unchanged:
			return fmt.Sprintf("Volume %q unchanged: it is registered with this spec", v.ID)
		case engine.Expanded, engine.Sized, engine.Measured, engine.AtLeastSource:
			line := fmt.Sprintf("Volume %q updated: %s (%s)", v.ID, grownWords[outcome], bytesIEC(v.CapacityBytes))
			// What else the registration changed, the capacity it asks for being the expansion.
			if others := slices.DeleteFunc(slices.Clone(changed), func(f string) bool { return f == "capacity_min" || f == "capacity_max" }); len(others) > 0 {
				line += "; " + strings.Join(others, ", ") + " changed"
			}
			return line
		case engine.Updated:
			if len(changed) == 0 {
				return fmt.Sprintf("Volume %q updated", v.ID)
			}
			return fmt.Sprintf("Volume %q updated: %s changed", v.ID, strings.Join(changed, ", "))
		}
		return fmt.Sprintf("Volume %q registered", v.ID)
	}
	what := "created"
	switch outcome {
	case engine.Unchanged:
		what = "unchanged: it exists with this spec"
	case engine.Expanded, engine.Sized, engine.Measured, engine.AtLeastSource:
		what = "exists; " + grownWords[outcome]
	}
	line := fmt.Sprintf("Volume %q %s (external ID %s", v.ID, what, shownQ(v.ExternalID))
	if c := bytesIEC(v.CapacityBytes); c != "" {
		line += ", " + c
	}
	return line + ")"
}

// The commands that submit volume specs: volume register and volume create, and their
// top-level aliases register and create. Their options are VolumeSubmitOptions.
type (
	VolumeRegisterOptions = VolumeSubmitOptions
	VolumeCreateOptions   = VolumeSubmitOptions
	RegisterOptions       = VolumeSubmitOptions
	CreateOptions         = VolumeSubmitOptions
)

func newCmdVolumeRegister(f *Factory, runF func(*VolumeRegisterOptions) error) *cobra.Command {
	return newCmdVolumeSubmit(f, spec.VerbRegister, "Register existing volumes", runF)
}

func newCmdVolumeCreate(f *Factory, runF func(*VolumeCreateOptions) error) *cobra.Command {
	return newCmdVolumeSubmit(f, spec.VerbCreate, "Create volumes through their plugin", runF)
}

func newCmdRegister(f *Factory, runF func(*RegisterOptions) error) *cobra.Command {
	return newCmdVolumeSubmit(f, spec.VerbRegister, "Register existing volumes (same as volume register)", runF)
}

func newCmdCreate(f *Factory, runF func(*CreateOptions) error) *cobra.Command {
	return newCmdVolumeSubmit(f, spec.VerbCreate, "Create volumes through their plugin (same as volume create)", runF)
}
