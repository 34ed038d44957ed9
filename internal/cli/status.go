package cli

import (
	"bufio"
	"context"
	"fmt"
	"io"
	"time"

	"github.com/spf13/cobra"

	"github.com/volctl/volctl/internal/engine"
	"github.com/volctl/volctl/internal/iostreams"
)

// StatusOptions are the inputs of `volctl status`.
type StatusOptions struct {
	IO     *iostreams.IOStreams
	Engine func(context.Context) (*engine.Engine, error)
	Now    func() time.Time

	ID       string // a volume: then this is volume status ID
	Exporter exportFlags

	// MaxVolumes bounds the volume rows of the summary; past it only the counts are shown.
	MaxVolumes int
}

// statusSummaryVolumes is how many volumes the summary lists before it only counts them.
const statusSummaryVolumes = 20

func newCmdStatus(f *Factory, runF func(*StatusOptions) error) *cobra.Command {
	opts := &StatusOptions{IO: f.IO, Engine: f.ReadingEngine, Now: time.Now, MaxVolumes: statusSummaryVolumes}
	cmd := &cobra.Command{
		Use:   "status [ID]",
		Short: "Summary of plugins, volumes and unsettled claims, or one volume",
		Long: `Without an argument, a one-screen summary: every plugin with its health (probed live), how
many volumes there are and how many can take claims (the first few listed), how many claims
are live, every claim that is not at rest (being published or released, or waiting for
volctl reconcile), and the work volctl owes that no claim drives (Owed: a create, delete or
expansion under way or cut short, a file system's expansion owed on this node, a staging or
attachment no claim uses, a snapshot's create or delete; the first few listed, --json has
all), which volctl reconcile does or says what stops.

With a volume ID or prefix it is volctl volume status ID.`,
		Example: `  volctl status
  volctl status db
  volctl status --json`,
		Args: maximumArgs(1),
		RunE: runOpts(opts, idArg(&opts.ID), runF, statusRun),
	}
	// Not addReadExportFlags: with an ID it prints one volume's status (engine.VolumeInfo), not
	// the summary, so -t is checked in statusRun, against what the arguments make it print.
	addExportFlags(cmd, &opts.Exporter, opts.IO)
	return cmd
}

// statusSummary is the JSON form of `volctl status` without an ID (docs/json.md).
type statusSummary struct {
	Plugins         []engine.PluginInfo `json:"plugins"`
	Volumes         volumeCounts        `json:"volumes"`
	Claims          claimCounts         `json:"claims"`
	UnsettledClaims []engine.ClaimInfo  `json:"unsettled_claims"`
	// Owed is the work volctl owes that no claim drives (engine.OwedWork), which volctl
	// reconcile does.
	Owed []engine.OwedWork `json:"owed"`
}

type volumeCounts struct {
	Total       int `json:"total"`
	Schedulable int `json:"schedulable"`
	InUse       int `json:"in_use"`
}

type claimCounts struct {
	Live      int `json:"live"`
	Read      int `json:"read"`
	Write     int `json:"write"`
	Unsettled int `json:"unsettled"`
	Degraded  int `json:"degraded"` // held, but their restore has not finished: not mounted
	// Covered counts the published claims whose target no longer shows the volume (covered by
	// another mount since, or nothing mounted there): among Unsettled.
	Covered int `json:"covered"`
}

func statusRun(ctx context.Context, opts *StatusOptions) (err error) {
	if opts.ID != "" {
		return volumeStatusRun(ctx, &VolumeStatusOptions{IO: opts.IO, Engine: opts.Engine, Now: opts.Now, ID: opts.ID, Exporter: opts.Exporter})
	}
	if err := checkReadTemplate[statusSummary](&opts.Exporter); err != nil {
		return err
	}
	e, err := opts.Engine(ctx)
	if err != nil {
		return err
	}
	plugins, err := e.PluginStatus(ctx, "")
	if err != nil {
		return fmt.Errorf("status: %w", err)
	}
	vols, err := e.VolumesShown(ctx) // the table's names scrubbed as sum's are (TestStatusTextMasksASecretInTheVolumeTable)
	if err != nil {
		return fmt.Errorf("status: %w", err)
	}
	// Each published claim's target looked at, as a volume's detail and group status say them: a
	// target covered or lost since its publish is a claim to see to, not one at rest
	// (TestStatusSummarySaysAPublishedTargetCoveredOrLost).
	claims, err := e.ClaimsLooked(ctx)
	if err != nil {
		return fmt.Errorf("status: %w", err)
	}
	sum := statusSummary{Plugins: plugins, UnsettledClaims: []engine.ClaimInfo{}}
	if sum.Plugins == nil {
		sum.Plugins = []engine.PluginInfo{}
	}
	sum.Volumes.Total = len(vols)
	probed := make(map[string]*engine.PluginInfo, len(plugins))
	for i := range plugins {
		probed[plugins[i].Key()] = &plugins[i]
	}
	// A claim whose target is covered is not at rest in the volume's row too, as the claim
	// section below counts it: the row said "1 write" above "1 not at rest"
	// (TestStatusSummaryVolumeRowCountsACoveredClaimUnsettled).
	coveredBy := engine.CoveredByVolume(claims)
	for i, v := range vols {
		v.Unsettled += coveredBy[v.Key()]
		// The plugins were probed just now, which another process's write lock may have kept
		// from being recorded: the volumes say what the probes found, as the plugin table does.
		v = v.WithPluginProbed(probed[v.PluginKey()])
		vols[i] = v
		if v.Schedulable {
			sum.Volumes.Schedulable++
		}
		if v.ReadClaims+v.WriteClaims > 0 {
			sum.Volumes.InUse++
		}
	}
	sum.Claims.Live = len(claims)
	for _, c := range claims {
		if c.Mode == "read" {
			sum.Claims.Read++
		} else {
			sum.Claims.Write++
		}
		if c.Covered != "" {
			sum.Claims.Covered++
		}
		if !c.AtRest() || c.Covered != "" {
			sum.UnsettledClaims = append(sum.UnsettledClaims, c)
		}
		if c.Degraded {
			sum.Claims.Degraded++
		}
	}
	sum.Claims.Unsettled = len(sum.UnsettledClaims)
	if sum.Owed, err = e.Owed(ctx); err != nil {
		return fmt.Errorf("status: %w", err)
	}
	if err := redactOutput(ctx, e, nil, &sum); err != nil {
		return fmt.Errorf("status: %w", err)
	}

	out := bufio.NewWriter(opts.IO.Out)
	defer flush(out, &err)
	if opts.Exporter.Enabled() {
		return opts.Exporter.Write(ctx, out, sum)
	}
	return writeStatusSummary(out, sum, vols, opts.MaxVolumes, opts.Now())
}

func writeStatusSummary(out *bufio.Writer, sum statusSummary, vols []engine.VolumeSummary, maxVolumes int, now time.Time) error {
	healthy := 0
	for _, p := range sum.Plugins {
		if p.Health().OK() {
			healthy++
		}
	}
	fmt.Fprintf(out, "Plugins: %d (%d healthy)\n", len(sum.Plugins), healthy)
	if len(sum.Plugins) > 0 {
		if err := writePluginTable(out, sum.Plugins); err != nil {
			return err
		}
		writePluginProblems(out, sum.Plugins)
	} else {
		fmt.Fprintln(out, "Next: start a CSI plugin and register it (volctl plugin register --id ID --socket PATH),")
		fmt.Fprintln(out, "or see the whole flow on volctl's own plugin with volctl quickstart.")
	}

	fmt.Fprintf(out, "\nVolumes: %d (%d schedulable, %d in use)\n", sum.Volumes.Total, sum.Volumes.Schedulable, sum.Volumes.InUse)
	if len(vols) > 0 {
		shown := vols
		if maxVolumes >= 0 && len(shown) > maxVolumes {
			shown = shown[:maxVolumes]
		}
		if len(shown) > 0 {
			if err := writeVolumeTable(out, shown); err != nil {
				return err
			}
		}
		if len(shown) < len(vols) {
			fmt.Fprintf(out, "... and %d more (volctl volume status lists them all)\n", len(vols)-len(shown))
		}
		if n := sum.Volumes.Total - sum.Volumes.Schedulable; n > 0 {
			fmt.Fprintf(out, "%d volume(s) cannot take claims (volctl volume status ID says why)\n", n)
		}
	} else if len(sum.Plugins) > 0 {
		fmt.Fprintln(out, "Next: volctl init volume writes a volume spec; volctl volume create FILE creates it through")
		fmt.Fprintln(out, "its plugin (volctl volume register FILE records one that exists already).")
	}

	fmt.Fprintf(out, "\nClaims: %d live (%d read, %d write), %d not at rest",
		sum.Claims.Live, sum.Claims.Read, sum.Claims.Write, sum.Claims.Unsettled)
	if sum.Claims.Degraded > 0 {
		fmt.Fprintf(out, ", %d degraded (held, not mounted: their restore failed)", sum.Claims.Degraded)
	}
	if sum.Claims.Covered > 0 {
		fmt.Fprintf(out, " (%d of them at a target that no longer shows the volume: covered, or unmounted since)", sum.Claims.Covered)
	}
	fmt.Fprintln(out)
	if len(sum.UnsettledClaims) > 0 {
		if err := writeClaimTable(out, sum.UnsettledClaims, now, true); err != nil {
			return err
		}
		if sum.Claims.Covered > 0 {
			fmt.Fprintln(out, "(volctl reconcile re-drives them, or says what stops it: a covered target's row names its umount)")
		} else {
			fmt.Fprintln(out, "(volctl reconcile re-drives them)")
		}
	}
	if len(sum.Owed) > 0 {
		fmt.Fprintf(out, "\nOwed: %d, work no claim drives\n", len(sum.Owed))
		// One screen, as the volumes: a bulk create cut short owes a row per volume.
		shown := sum.Owed
		if maxVolumes >= 0 && len(shown) > maxVolumes {
			shown = shown[:maxVolumes]
		}
		if err := writeOwedTable(out, shown, now); err != nil {
			return err
		}
		if len(shown) < len(sum.Owed) {
			fmt.Fprintf(out, "... and %d more (volctl status --json lists them all)\n", len(sum.Owed)-len(shown))
		}
		fmt.Fprintln(out, "(volctl reconcile does it, or says what stops it)")
	}
	return nil
}

// writeOwedTable writes the work volctl owes (engine.OwedWork) as a table.
func writeOwedTable(out io.Writer, owed []engine.OwedWork, now time.Time) error {
	t := newTable(out, "KIND", "VOLUME", "PLUGIN", "SINCE", "WHAT")
	for _, w := range owed {
		t.row(w.Kind, w.VolumeID, w.PluginID, age(now, w.Since), w.What)
	}
	return t.render()
}
