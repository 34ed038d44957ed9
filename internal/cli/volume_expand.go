package cli

import (
	"context"
	"fmt"
	"strings"

	"github.com/spf13/cobra"

	"github.com/volctl/volctl/internal/engine"
	"github.com/volctl/volctl/internal/iostreams"
	"github.com/volctl/volctl/internal/spec"
)

// VolumeExpandOptions are the inputs of `volctl volume expand`.
type VolumeExpandOptions struct {
	IO     *iostreams.IOStreams
	Engine func(context.Context) (*engine.Engine, error)

	ID       string
	Size     string // the new capacity_min, "10GiB"
	Limit    string // the new capacity_max; empty keeps the volume's
	Exporter exportFlags
}

func newCmdVolumeExpand(f *Factory, runF func(*VolumeExpandOptions) error) *cobra.Command {
	opts := &VolumeExpandOptions{IO: f.IO, Engine: f.Engine}
	cmd := &cobra.Command{
		Use:   "expand ID --size SIZE",
		Short: "Grow a volume",
		Long: `Grow a volume to at least --size: ControllerExpandVolume when the plugin's controller can
expand (EXPAND_VOLUME), then NodeExpandVolume for each published claim when the plugin says the
node must expand too, or expands only on the node (with the volume's staging path; at the staging
path when the volume is staged but not published). A volume not on this node owes the node
expansion until a claim next publishes it. One that failed stays owed: run the same expand again,
or volctl reconcile. The new size becomes the volume's capacity_min. Re-registering or
re-creating the volume with a larger capacity_min does the same. A plugin that answers with
less than --size fails the expand (exit 1): the volume keeps the larger of its old size and the
one answered, and its capacity_min, so the same expand asks again. One that answers with more
than the limit (capacity_max) expanded it, and that cannot be undone: the volume is recorded at
the size answered and the expand fails (exit 1), naming the plugin and both sizes. A plugin that
says the node must expand but whose node service cannot (no EXPAND_VOLUME) fails the expand
(exit 1) with the node expansion left owed.

Sizes read like a spec's capacity_min: "10GiB", "500M", "1T". A volume never shrinks (exit 2);
asking for its current size changes nothing but sending a node expansion still owed, and
recording --limit. A volume with no size recorded (registered, its plugin reporting none) is
looked up first where the plugin can list it: at --size or more it is not grown, only its size
recorded ("is already"); where it cannot, the expand is sent and said to be at least --size
now, which it may have been already. A plugin without EXPAND_VOLUME is refused (exit 2).
ControllerExpandVolume needs a plugin that advertises online expansion (VOLUME_EXPANSION
ONLINE) while the volume has claims, or is still attached or staged with none: one that expands
only offline, or says neither, is refused then (exit 4): release them first, or let reconcile
undo the attachment; so is one the plugin refuses with FAILED_PRECONDITION (in use: exit 4,
nothing recorded). A plugin that expands on the node alone is refused only when it says it
expands offline only and the volume has claims.
--limit sets a new capacity_max; without it, a size above the volume's capacity_max is
refused (exit 2), unless it is the size the volume has (a plugin answered an expand above its
limit): that grows nothing, and pays a node expansion owed.`,
		Example: `  volctl volume expand db --size 20GiB
  volctl volume expand db --size 20GiB --limit 40GiB --json`,
		Args: exactArgs(1),
		RunE: runOpts(opts, idArg(&opts.ID), runF, volumeExpandRun),
	}
	cmd.Flags().StringVar(&opts.Size, "size", "", `the size to grow to, e.g. "20GiB" (required)`)
	cmd.Flags().StringVar(&opts.Limit, "limit", "", "a new upper bound (capacity_max) for the plugin")
	requiredFlag(cmd, "size", expandSizeRequired)
	addActingExportFlags[engine.VolumeInfo](cmd, &opts.Exporter, opts.IO)
	return cmd
}

const expandSizeRequired = "volume expand: --size is required"

func volumeExpandRun(ctx context.Context, opts *VolumeExpandOptions) error {
	if opts.Size == "" {
		return usageError("%s", expandSizeRequired)
	}
	size, err := spec.ParseSize(opts.Size)
	if err != nil {
		return usageError("volume expand: --size: %v", err)
	}
	if size <= 0 {
		// Refused here, as --limit 0 is, before the plugin is reached: the engine's "must be
		// positive" named no flag, and with the plugin down the error blamed its socket
		// (TestExpandSizeOfZeroBytesIsRefusedAsTheLimitIs).
		return usageError("volume expand: --size %q is 0 bytes: the new size must be positive", opts.Size)
	}
	var limit int64
	if opts.Limit != "" {
		if limit, err = spec.ParseSize(opts.Limit); err != nil {
			return usageError("volume expand: --limit: %v", err)
		}
		if limit <= 0 {
			// 0 is what every check below reads as no --limit: given, it was dropped, and the
			// refusal advised passing --limit (TestExpandLimitZeroIsNotTakenForNoLimit).
			return usageError("volume expand: --limit %q is 0 bytes: a limit must be positive (leave --limit out to keep the volume's capacity_max)", opts.Limit)
		}
	}
	e, err := opts.Engine(ctx)
	if err != nil {
		return err
	}
	before, err := e.Volume(ctx, opts.ID)
	if err != nil {
		return fmt.Errorf("expand volume %q: %w", opts.ID, err)
	}
	if before.ID != opts.ID && strings.HasPrefix(before.ID, opts.ID) {
		// Volume reads a unique prefix, as volume status does; an expansion cannot be undone,
		// so it takes the full ID, as every command that changes a volume does.
		return fmt.Errorf("expand volume %q: volume %q not found (it is a prefix of %q: an expand takes the full ID)",
			opts.ID, opts.ID, before.ID)
	}
	id := before.ID // the stored form of the ID given
	if limit == 0 && before.Handover == nil && engine.AboveCapacityMax(before.RequestedMax, max(before.CapacityBytes, before.RequestedMin), size) {
		// Said here before anything starts; the engine applies the capacity_max it reads under
		// the volume's lock (a registration may lower it meanwhile), so no limit is passed for
		// it: the bound read here may be stale by then.
		return usageError("expand volume %q: %s is above its capacity_max %s; pass --limit to raise it",
			id, spec.FormatSize(size), spec.FormatSize(before.RequestedMax))
	}
	pctx, done := startProgress(ctx, opts.IO, opts.Exporter.Enabled())
	// What the expand did is told from the volume as it found it under the volume's lock,
	// not as read above: another volctl's expand may have been waited for in between.
	before, v, grew, err := e.ExpandVolumeFrom(pctx, id, size, limit)
	done()
	if err != nil {
		return err
	}
	if opts.Exporter.Enabled() {
		if err := redactOutput(ctx, e, nil, &v); err != nil {
			return fmt.Errorf("volume expand: %w", err)
		}
		werr := opts.Exporter.Write(ctx, opts.IO.Out, v)
		if expandChangedNothing(before, v, grew) {
			// Found at the size asked, with nothing owed paid and no new capacity_max: nothing
			// was done, and a filter failing on it is a usage error, exit 2, as that of a
			// release that released nothing. Before (round 61), it said `volume "db"
			// expanded; only printing it failed`, exit 1: an expansion a script's log
			// recorded that never happened.
			return werr
		}
		// Worded by what the expand did: "expanded" was said of a volume found at the size
		// asked, its capacity_min only recorded (TestExpandHadAlreadyWhoseFilterFailsIsNotSaidExpanded).
		return afterDone(werr, "volume %q %s", v.ID, expandDid(before, v, grew))
	}
	var out strings.Builder
	switch {
	case grew == engine.AtLeastSource:
		fmt.Fprintf(&out, "Volume %q was not grown: %s\n", v.ID, v.ExpansionNote)
		v.ExpansionNote = "" // said
	case grew == engine.Measured:
		fmt.Fprintf(&out, "Volume %q is already %s, as its plugin lists it (volctl had no size recorded for it, and records this one now)", v.ID, bytesIEC(v.CapacityBytes))
		if v.RequestedMax != before.RequestedMax {
			fmt.Fprintf(&out, "; its capacity_max is now %s", bytesIEC(v.RequestedMax))
		}
		out.WriteString("\n")
	case grew == engine.Sized:
		fmt.Fprintf(&out, "Volume %q is %s now, at least the %s asked: volctl had no size recorded for it, and its plugin does not list it, so it may have had that already\n",
			v.ID, bytesIEC(v.CapacityBytes), bytesIEC(size))
	case v.CapacityBytes == before.CapacityBytes && v.RequestedMin == before.RequestedMin && before.NodeExpansionOwed > v.NodeExpansionOwed && v.ExpansionNote == "":
		// The debt paid; one let go, nothing sent, has its note (below) beside "already".
		fmt.Fprintf(&out, "Volume %q expanded on the node to %s\n", v.ID, bytesIEC(before.NodeExpansionOwed))
	case v.CapacityBytes == before.CapacityBytes && v.RequestedMin == before.RequestedMin:
		fmt.Fprintf(&out, "Volume %q is already %s", v.ID, bytesIEC(max(v.CapacityBytes, v.RequestedMin)))
		if v.RequestedMax != before.RequestedMax {
			fmt.Fprintf(&out, "; its capacity_max is now %s", bytesIEC(v.RequestedMax))
		}
		out.WriteString("\n")
	default:
		fmt.Fprintf(&out, "Volume %q expanded to %s\n", v.ID, bytesIEC(v.CapacityBytes))
	}
	if v.ExpansionNote != "" {
		fmt.Fprintf(&out, "Note: %s\n", v.ExpansionNote)
	}
	if v.NodeExpansionOwed > 0 {
		fmt.Fprintf(&out, "The node expansion to %s is owed: it is sent when a claim next publishes the volume on this node\n",
			bytesIEC(v.NodeExpansionOwed))
	}
	return printDone(opts.IO.Out, out.String(), "volume %q: expand done", v.ID)
}

// expandDid words what an expand that found the volume as before and left it as after, saying
// grew, did, for the line of an expand whose result could not be printed.
func expandDid(before, after engine.VolumeInfo, grew engine.SubmitOutcome) string {
	switch {
	case grew == engine.Expanded:
		return "expanded"
	case grew == engine.Sized:
		return "expanded (its size was not known, and it may have had the size asked already)"
	case grew == engine.Measured:
		return "found at the size asked as its plugin lists it, not grown; its size is recorded now"
	case grew == engine.AtLeastSource:
		return "not grown: it is at least its snapshot's recorded size; the size asked is recorded as its capacity_min"
	case before.NodeExpansionOwed > after.NodeExpansionOwed && after.ExpansionNote != "":
		// Let go, or paid without NodeExpandVolume: its note says which, not "expanded on the
		// node" of a step never sent (TestGuessLetGoWhoseFilterFailsIsNotSaidExpandedOnTheNode).
		return "not grown on the node: " + after.ExpansionNote
	case before.NodeExpansionOwed > after.NodeExpansionOwed:
		return "expanded on the node (its owed NodeExpandVolume paid)"
	case after.RequestedMax != before.RequestedMax:
		return "not grown; its capacity_max is set"
	}
	return "not grown"
}

// expandChangedNothing reports whether an expand that found the volume as before (under its
// lock) and left it as after, saying grew, changed nothing: it found the volume at the size
// asked (its text says `Volume "db" is already 2GiB`), paid no node expansion owed and set no
// new capacity_max. One that measured or recorded a size (engine.Measured, engine.Sized) or
// sent an expansion (engine.Expanded) did something.
func expandChangedNothing(before, after engine.VolumeInfo, grew engine.SubmitOutcome) bool {
	return grew == engine.Unchanged &&
		after.CapacityBytes == before.CapacityBytes && after.RequestedMin == before.RequestedMin &&
		after.RequestedMax == before.RequestedMax && after.NodeExpansionOwed == before.NodeExpansionOwed
}
