package cli

import (
	"context"
	"fmt"

	"github.com/spf13/cobra"

	"github.com/volctl/volctl/internal/engine"
	"github.com/volctl/volctl/internal/iostreams"
	"github.com/volctl/volctl/internal/spec"
)

// VolumeReleaseOptions are the inputs of `volctl volume release`.
type VolumeReleaseOptions struct {
	IO     *iostreams.IOStreams
	Engine func(context.Context) (*engine.Engine, error)

	VolumeID string
	Alloc    string
	Exporter exportFlags
}

func newCmdVolumeRelease(f *Factory, runF func(*VolumeReleaseOptions) error) *cobra.Command {
	opts := &VolumeReleaseOptions{IO: f.IO, Engine: f.Engine}
	cmd := &cobra.Command{
		Use:   "release VOLUME --alloc ALLOC",
		Short: "Release an alloc's claim on a volume",
		Long: `Release an alloc's claim: NodeUnpublishVolume, then NodeUnstageVolume when no other claim
uses the staging, then ControllerUnpublishVolume when no other claim holds the volume, and
free the claim. Each step is recorded before the next, so an interrupted release is finished
by volctl reconcile.

Releasing a claim that does not exist is a no-op: it says so on stderr and exits 0, and so
does a release that waited for another volctl's release of the claim (saying so).`,
		Example: `  volctl volume release db --alloc web-0
  volctl volume release db --alloc web-0 --json`,
		Args: lastAsFlag(1, "--alloc"),
		RunE: runOpts(opts, idArg(&opts.VolumeID), runF, volumeReleaseRun),
	}
	idVar(cmd.Flags(), &opts.Alloc, "alloc", "the alloc whose claim to release (required)")
	requiredFlag(cmd, "alloc", releaseAllocRequired)
	addActingExportFlags[engine.ReleaseResult](cmd, &opts.Exporter, opts.IO)
	return cmd
}

const releaseAllocRequired = "volume release: --alloc is required: the alloc whose claim to release"

func volumeReleaseRun(ctx context.Context, opts *VolumeReleaseOptions) error {
	if opts.Alloc == "" {
		return usageError("%s", releaseAllocRequired)
	}
	// The alloc names that claim refuses can hold no claim: say so, not "nothing to release".
	if err := spec.ValidateID("alloc", opts.Alloc); err != nil {
		return usageError("volume release: --alloc: %v", err)
	}
	if err := checkTemplateFields[engine.ReleaseResult](&opts.Exporter); err != nil {
		return err
	}
	e, err := opts.Engine(ctx)
	if err != nil {
		return err
	}
	pctx, done := startProgress(ctx, opts.IO, opts.Exporter.Enabled())
	res, err := e.Release(pctx, opts.VolumeID, opts.Alloc)
	done()
	if err != nil {
		return err
	}
	switch {
	case res.ReleasedMeanwhile:
		fmt.Fprintf(opts.IO.ErrOut, "Alloc %q's claim on volume %q was released by another volctl while this release waited for the volume: nothing left to release\n", opts.Alloc, opts.VolumeID)
	case !res.Released:
		fmt.Fprintf(opts.IO.ErrOut, "Alloc %q holds no claim on volume %q: nothing to release\n", opts.Alloc, opts.VolumeID)
	}
	if opts.Exporter.Enabled() {
		// Scrubbed as volume status scrubs the same claim: a volume's ID may hold a secret
		// (TestReleaseMasksASecretInTheVolumesID).
		if err := redactOutput(ctx, e, nil, &res); err != nil {
			return afterDone(err, "claim %q for alloc %q released", opts.VolumeID, opts.Alloc)
		}
		err := opts.Exporter.Write(ctx, opts.IO.Out, res)
		if res.Released {
			err = afterDone(err, "claim %q for alloc %q released", opts.VolumeID, opts.Alloc)
		}
		return err
	}
	if res.Released {
		return printDone(opts.IO.Out, fmt.Sprintf("Released %s claim of alloc %q on volume %q\n", res.Claim.Mode, opts.Alloc, opts.VolumeID),
			"claim %q for alloc %q released", opts.VolumeID, opts.Alloc)
	}
	return nil
}
