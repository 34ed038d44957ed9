package cli

import (
	"context"
	"errors"
	"fmt"
	"strings"

	"github.com/spf13/cobra"

	"github.com/volctl/volctl/internal/engine"
	"github.com/volctl/volctl/internal/iostreams"
)

// VolumeDetachOptions are the inputs of `volctl volume detach`.
type VolumeDetachOptions struct {
	IO      *iostreams.IOStreams
	Engine  func(context.Context) (*engine.Engine, error)
	Confirm func(yes bool, action string) error
	// Stored is Engine when the state dir holds a database, nil without one: the look before
	// the question for a volume (confirmedOnVolume). nil: no look.
	Stored func(context.Context) (*engine.Engine, error)

	VolumeID string
	Force    bool
	Yes      bool
	Exporter exportFlags
}

func newCmdVolumeDetach(f *Factory, runF func(*VolumeDetachOptions) error) *cobra.Command {
	opts := &VolumeDetachOptions{IO: f.IO, Engine: f.Engine, Confirm: f.confirm, Stored: f.storedEngine}
	cmd := &cobra.Command{
		Use:   "detach VOLUME",
		Short: "Release every claim on a volume on this host",
		Long: `Release every claim on the volume, each through the release path.

--force is for a plugin that is gone: the node RPCs are skipped and volctl unmounts its own
target and staging paths itself (lazily where a process still uses one, which is warned of: it
stays mounted for that process), ControllerUnpublishVolume is still tried (not for an attachment
volctl never recorded that the plugin lists: another orchestrator's, left as it is), and the
claims are freed whatever happens. Everything it could not do is printed as a warning on stderr:
the storage may still be attached or mounted somewhere volctl cannot see. An attachment volctl
knows of and could not undo stays recorded (volctl volume status shows it: attached_to):
volctl reconcile (or volume delete) sends ControllerUnpublishVolume again once the plugin
answers. Until then volume deregister and plugin deregister refuse to forget it; volume
deregister --force forgets it, saying so, when the plugin still cannot take it.

Claims another volctl released while the detach waited for the volume are named on stderr.
It asks first on a terminal (a volume volctl does not record is said not found without asking)
and needs --yes otherwise. Exit status 1 when a claim could not
be released (it is left for volctl reconcile).`,
		Example: `  volctl volume detach db --yes
  volctl volume detach db --force --yes`,
		Args: exactArgs(1),
		RunE: runOpts(opts, idArg(&opts.VolumeID), runF, volumeDetachRun),
	}
	cmd.Flags().BoolVar(&opts.Force, "force", false, "skip the node RPCs (the plugin is gone) and free the claims anyway")
	addYesFlag(cmd, &opts.Yes, "off a terminal")
	addActingExportFlags[engine.DetachResult](cmd, &opts.Exporter, opts.IO)
	return cmd
}

func volumeDetachRun(ctx context.Context, opts *VolumeDetachOptions) error {
	action := fmt.Sprintf("Release every claim on volume %q", opts.VolumeID)
	if opts.Force {
		action = fmt.Sprintf("Force-detach volume %q without its plugin's node service", opts.VolumeID)
	}
	e, err := confirmedOnVolume(ctx, opts.IO, opts.Confirm, opts.Yes, action, opts.Engine, opts.Stored, fmt.Sprintf("detach %q", opts.VolumeID), opts.VolumeID)
	if err != nil {
		return err
	}
	pctx, done := startProgress(ctx, opts.IO, opts.Exporter.Enabled())
	res, err := e.Detach(pctx, opts.VolumeID, opts.Force)
	done()
	// The warnings word plugin data (the node an attachment record names), which a plugin may
	// have echoed a secret into: scrubbed as every printing command scrubs its output.
	if rerr := redactOutput(ctx, e, nil, &res); rerr != nil {
		return errors.Join(err, fmt.Errorf("volume detach: %w", rerr))
	}
	for _, w := range res.Warnings {
		fmt.Fprintf(opts.IO.ErrOut, "Warning: %s\n", escapeLines(w))
	}
	if res.Released == nil {
		res.Released = []engine.ClaimInfo{}
	}
	if err != nil && len(res.Released) == 0 && len(res.Failed) == 0 && len(res.Warnings) == 0 && res.LeftAttached == "" && res.Unstaged == "" && res.DetachedFrom == "" {
		return err // nothing was tried (an unknown volume, say): nothing to report on stdout
	}
	// What was done, for an error that only the printing failed: the claims released, and the
	// node a forced detach detached the volume from, which "0 claim(s) released" alone read as
	// a detach that did nothing (TestForcedDetachResultLostSaysItDetachedFromTheNode).
	doneWords, doneArgs := "volume %q: %d claim(s) released", []any{opts.VolumeID, len(res.Released)}
	if res.Unstaged != "" {
		doneWords, doneArgs = doneWords+", unstaged at %s", append(doneArgs, res.Unstaged)
	}
	if res.DetachedFrom != "" {
		doneWords, doneArgs = doneWords+", detached from node %q", append(doneArgs, res.DetachedFrom)
	}
	// Named on stderr whatever stdout carries, as `volume release` names what another volctl
	// released (docs/json.md's released_meanwhile; TestDetachJSONNamesClaimsReleasedMeanwhileOnStderr).
	if len(res.ReleasedMeanwhile) > 0 {
		fmt.Fprintf(opts.IO.ErrOut, "Another volctl released %s on volume %q while this detach waited for the volume\n", allocClaims(res.ReleasedMeanwhile), opts.VolumeID)
	}
	if opts.Exporter.Enabled() {
		werr := opts.Exporter.Write(ctx, opts.IO.Out, res)
		if werr != nil && err == nil && detachDidNothing(res, opts.Force) {
			// Nothing released, nothing tried: a filter failing on it is a usage error, exit 2,
			// as that of a release that released nothing. Before (round 61), it said `volume
			// "db": 0 claim(s) released; only printing it failed`, exit 1, read by a script as
			// work done.
			return werr
		}
		if werr != nil {
			err = joinUnprinted(err, afterDone(werr, doneWords, doneArgs...))
		}
		return err
	}
	var lines strings.Builder
	for _, c := range res.Released {
		fmt.Fprintf(&lines, "Released %s claim of alloc %q\n", c.Mode, c.Alloc)
	}
	switch {
	case res.Unstaged != "" && opts.Force:
		// Beside the claims it released, "(no claim used it)" said the opposite.
		fmt.Fprintf(&lines, "Unmounted volume %q's staging at %s itself (NodeUnstageVolume skipped)\n", opts.VolumeID, res.Unstaged)
	case res.Unstaged != "":
		fmt.Fprintf(&lines, "Unstaged volume %q at %s (no claim used it)\n", opts.VolumeID, res.Unstaged)
	}
	if res.DetachedFrom != "" {
		fmt.Fprintf(&lines, "Detached volume %q from node %q\n", opts.VolumeID, res.DetachedFrom)
	}
	if lines.Len() > 0 {
		if werr := printDone(opts.IO.Out, lines.String(), doneWords, doneArgs...); werr != nil {
			err = joinUnprinted(err, werr)
		}
	}
	switch {
	case res.LeftAttached != "" && err == nil:
		// Not "nothing to detach": volctl records it attached, the unpublish owed (a warning
		// above says why) (TestForcedDetachWhoseOwedUnpublishStillFailsDoesNotSayNothingToDetach).
		fmt.Fprintf(opts.IO.ErrOut, "Volume %q stays recorded attached to node %q, its ControllerUnpublishVolume owed: `volctl reconcile` sends it once the plugin takes it\n",
			opts.VolumeID, res.LeftAttached)
	case len(res.Released) == 0 && len(res.Failed) == 0 && res.DetachedFrom == "" && res.Unstaged == "" && err == nil:
		what := "has no claims"
		if len(res.ReleasedMeanwhile) > 0 {
			what = "has no claims left"
		}
		fmt.Fprintf(opts.IO.ErrOut, "Volume %q %s: nothing to detach\n", opts.VolumeID, what)
	}
	return err
}

// detachDidNothing reports whether a detach whose result is res, forced or not, did nothing:
// not forced, the volume had no claims left to release (its text says `Volume "db" has no
// claims: nothing to detach`), and none failed. A forced one acts even then: it unmounts a
// staging left behind and sends ControllerUnpublishVolume whatever the records say.
func detachDidNothing(res engine.DetachResult, force bool) bool {
	return !force && len(res.Released) == 0 && len(res.Failed) == 0 && res.DetachedFrom == "" && res.Unstaged == ""
}

// allocClaims names claims by their allocs: `the write claim of alloc "a1"`, the first ten when
// there are more.
func allocClaims(cs []engine.ClaimInfo) string {
	return firstTen(cs, func(c engine.ClaimInfo) string { return fmt.Sprintf("the %s claim of alloc %q", c.Mode, c.Alloc) })
}

// joinUnprinted is a command's failure, failed (nil for none), with unprinted, afterDone's
// error saying what it did whose result was not printed: both said, the failure's exit status
// kept. A detach that released some claims and failed others, its reader gone, said the
// failure alone, the claims released nowhere
// (TestDetachThatFailsInPartWhoseResultIsLostSaysWhatItReleased).
func joinUnprinted(failed, unprinted error) error {
	if failed == nil {
		return unprinted
	}
	return withCode(ExitCode(failed), errors.Join(failed, unprinted))
}
