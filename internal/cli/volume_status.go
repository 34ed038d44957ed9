package cli

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"slices"
	"time"

	"github.com/spf13/cobra"

	"github.com/volctl/volctl/internal/engine"
	"github.com/volctl/volctl/internal/iostreams"
)

// VolumeStatusOptions are the inputs of `volctl volume status` (and of `volctl status ID`).
type VolumeStatusOptions struct {
	IO     *iostreams.IOStreams
	Engine func(context.Context) (*engine.Engine, error)
	Now    func() time.Time

	ID       string // a volume ID or an unambiguous prefix; empty lists every volume
	Exporter exportFlags
}

func newCmdVolumeStatus(f *Factory, runF func(*VolumeStatusOptions) error) *cobra.Command {
	opts := &VolumeStatusOptions{IO: f.IO, Engine: f.ReadingEngine, Now: time.Now}
	cmd := &cobra.Command{
		Use:   "status [ID | PREFIX]",
		Short: "List volumes, or show one volume with its claims",
		Long: `Without an argument, list every volume: ID, name, plugin, whether it can take claims now,
its current access mode and its live claims.

With a volume ID, or a prefix of one, show that volume in the spirit of nomad volume status ID:
external ID, provider and version, capacity, the plugin's health, the current access and
attachment mode, the mount options (mount flags are never shown, only which of suid, dev and
exec they ask for, the volume's and each claim's), topologies, capabilities, and
every claim with its alloc, mode, state, age and last error.

A prefix that matches several volumes lists them and exits 2. The list reads the state and
looks at published claims' targets (a claim whose target another mount covers, or that lost its
mount, counts as not at rest); plugin health is as last recorded (volctl plugin status probes
live).`,
		Example: `  volctl volume status
  volctl volume status db
  volctl volume status --json
  volctl volume status db -t '{{range .claims}}{{.alloc}} {{.state}}{{"\n"}}{{end}}'`,
		Args: maximumArgs(1),
		RunE: runOpts(opts, idArg(&opts.ID), runF, volumeStatusRun),
	}
	addExportFlags(cmd, &opts.Exporter, opts.IO)
	return cmd
}

// volumeStatusRun lists the volumes or shows one. Output goes through a buffer: a list of
// 10,000 volumes is one write, not one per cell.
func volumeStatusRun(ctx context.Context, opts *VolumeStatusOptions) (err error) {
	check := checkReadTemplate[[]engine.VolumeSummary]
	if opts.ID != "" {
		check = checkReadTemplate[engine.VolumeInfo]
	}
	if err := check(&opts.Exporter); err != nil {
		return err
	}
	e, err := opts.Engine(ctx)
	if err != nil {
		return err
	}
	out := bufio.NewWriterSize(opts.IO.Out, 64<<10)
	defer flush(out, &err)
	if opts.ID == "" {
		// A claim whose target another mount covers since its publish, or that lost its
		// mount, is not at rest, as the summary and a volume's detail count it: the list said
		// such a volume settled (TestVolumeListCountsACoveredClaimUnsettledAsTheDetailAndSummaryDo).
		// The targets are looked at once, before the rows.
		claims, err := e.ClaimsLooked(ctx)
		if err != nil {
			return fmt.Errorf("volume status: %w", err)
		}
		covered := engine.CoveredByVolume(claims)
		withCovered := func(v *engine.VolumeSummary) { v.Unsettled += covered[v.Key()] }
		if opts.Exporter.JSON && opts.Exporter.Template == "" && opts.Exporter.JQ == "" {
			if err := writeVolumeListJSON(ctx, out, e, withCovered); err != nil {
				return fmt.Errorf("volume status: %w", err)
			}
			return nil
		}
		if !opts.Exporter.Enabled() {
			// The table's cells straight from the rows, without the list in between.
			t := newVolumeTable(out)
			err := e.EachVolumeShown(ctx, engine.TableVolumeFields, func(v *engine.VolumeSummary) error {
				withCovered(v)
				addVolumeRow(t, v)
				return nil
			})
			if err != nil {
				return fmt.Errorf("volume status: %w", err)
			}
			if t.rows == 1 {
				return writeVolumeList(ctx, out, opts.IO, &opts.Exporter, nil)
			}
			return t.render()
		}
		vols, err := e.VolumesShown(ctx)
		if err != nil {
			return fmt.Errorf("volume status: %w", err)
		}
		for i := range vols {
			withCovered(&vols[i])
		}
		return writeVolumeList(ctx, out, opts.IO, &opts.Exporter, vols)
	}
	info, err := e.VolumeShown(ctx, opts.ID) // scrubbed with the secrets of its own read
	var amb *engine.AmbiguousError
	if errors.As(err, &amb) {
		// A -t or --jq written for one volume fails on the list of matches: the error still
		// says first that the ID was ambiguous, or the template would look like the mistake.
		// Scrubbed as the list is (EachVolumeShown): the error line masked the IDs the array
		// printed above it showed (TestVolumeListMasksASecretInTheVolumesNames). A copy: the
		// error's line is worded from amb's, which the final error's scrub scrubs once
		// (TestAmbiguousPrefixErrorLineIsScrubbedOnce).
		matches := slices.Clone(amb.Matches)
		if rerr := redactOutput(ctx, e, nil, &matches); rerr != nil {
			return fmt.Errorf("volume status: %w (%w)", err, rerr)
		}
		if werr := writeVolumeList(ctx, out, opts.IO, &opts.Exporter, matches); werr != nil {
			return withCode(ExitUsage, fmt.Errorf("volume status: %w; give more of the ID (printing the matching volumes failed too: %w)", err, werr))
		}
		return withCode(ExitUsage, fmt.Errorf("volume status: %w; give more of the ID", err))
	}
	if err != nil {
		return fmt.Errorf("volume status: %w", err)
	}
	if opts.Exporter.Enabled() {
		return opts.Exporter.Write(ctx, out, info)
	}
	return writeVolumeDetail(out, info, opts.Now())
}

func writeVolumeList(ctx context.Context, out *bufio.Writer, ios *iostreams.IOStreams, exp *exportFlags, vols []engine.VolumeSummary) error {
	if exp.Enabled() {
		if vols == nil {
			vols = []engine.VolumeSummary{}
		}
		return exp.Write(ctx, out, vols)
	}
	if len(vols) == 0 {
		fmt.Fprintln(ios.ErrOut, "No volumes registered (volctl volume register or volctl volume create).")
		return nil
	}
	return writeVolumeTable(out, vols)
}
