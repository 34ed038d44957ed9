package cli

import (
	"bufio"
	"context"
	"fmt"

	"github.com/spf13/cobra"

	"github.com/volctl/volctl/internal/engine"
	"github.com/volctl/volctl/internal/iostreams"
)

// ReconcileOptions are the inputs of `volctl reconcile`.
type ReconcileOptions struct {
	IO     *iostreams.IOStreams
	Engine func(context.Context) (*engine.Engine, error)

	Exporter exportFlags
}

func newCmdReconcile(f *Factory, runF func(*ReconcileOptions) error) *cobra.Command {
	opts := &ReconcileOptions{IO: f.IO, Engine: f.Engine}
	cmd := &cobra.Command{
		Use:   "reconcile",
		Short: "Bring the host back in line with the recorded state",
		Long: `Bring this host back in line with what volctl has recorded: finish creates and deletes that
were interrupted (of volumes and of snapshots), re-drive every claim that is not at rest (being published goes on to
published; being released goes on to freed, as do the claims of stopped groups and of
allocs past their group's count, a group run's scale-down cut short), restore
published claims whose mount is gone (after a reboot or a plugin restart) by staging and
publishing them again without a new claim, and undo stagings no claim uses. A read claim
whose mount is read-write (an older volctl may have published one so) is reported, not
unmounted from under its alloc: release it once the alloc stops and claim it again.

Prints what it did. Exit status 1 when something is still wrong, each problem listed on
stderr (with --json, the report is printed and the exit status is still 1). volctl agent
runs the same pass at start and on a timer.`,
		Example: `  volctl reconcile
  volctl reconcile --json`,
		Args: exactArgs(0),
		RunE: runOpts(opts, nil, runF, reconcileRun),
	}
	addActingExportFlags[engine.ReconcileReport](cmd, &opts.Exporter, opts.IO)
	return cmd
}

func reconcileRun(ctx context.Context, opts *ReconcileOptions) error {
	e, err := opts.Engine(ctx)
	if err != nil {
		return err
	}
	rep, recErr := e.Reconcile(ctx)
	// The arrays are part of the JSON contract: [] when empty, never null.
	if rep.Actions == nil {
		rep.Actions = []engine.ReconcileAction{}
	}
	if rep.Problems == nil {
		rep.Problems = []engine.ReconcileAction{}
	}
	if err := redactOutput(ctx, e, nil, &rep); err != nil {
		return joinUnprinted(recErr, fmt.Errorf("reconcile: %w", err))
	}
	out := bufio.NewWriter(opts.IO.Out)
	if opts.Exporter.Enabled() {
		err = opts.Exporter.Write(ctx, out, rep)
	} else if len(rep.Actions) == 0 {
		// A pass that failed (recErr) did not find everything in place: it may not have looked.
		if len(rep.Problems) == 0 && recErr == nil {
			fmt.Fprintln(out, "Nothing to do: every claim is at rest and every mount is in place.")
		}
	} else {
		t := newTable(out, "ACTION", "VOLUME", "ALLOC", "DETAIL")
		for _, a := range rep.Actions {
			t.row(a.Kind, a.VolumeID, a.Alloc, a.Message)
		}
		err = t.render()
	}
	flush(out, &err)
	// The table's too (TestActingCommandsSayWhatTheyDidWhenTheirResultIsLost).
	code := ExitCode(err)
	err = afterDone(err, "reconcile: %d action(s) done, %d problem(s) left", len(rep.Actions), len(rep.Problems))
	if len(rep.Actions) == 0 && code == ExitUsage {
		// A pass that did nothing whose filter failed is a read's: 2, nothing was done.
		err = withCode(ExitUsage, err)
	}
	// Said on stderr whether or not the result reached stdout: a result lost (a reader gone, a
	// full disk) said only how many problems were left, not which nor what to run
	// (TestReconcileWhoseResultIsLostStillSaysItsProblems).
	for _, p := range rep.Problems {
		fmt.Fprintf(opts.IO.ErrOut, "Problem: %s\n", escapeLines(p.Message))
	}
	// The pass's own failure is said whatever became of its result: a filter failing on the
	// report of a pass that failed said only that printing failed, exit 2, the pass's error
	// dropped (TestReconcileThatFailedWhoseFilterFailsStillSaysItFailed).
	var failed error
	switch {
	case recErr != nil && !rep.Whole():
		// Cut short (a signal, a state it could not read): said, with the problems found
		// before, whatever they are; "N problem(s) remain" alone read as all that is left,
		// what the pass never got to unsaid
		// (TestReconcileInterruptedAfterAProblemSaysItWasInterrupted).
		failed = withCode(ExitError, recErr)
	case len(rep.Problems) > 0:
		failed = withCode(ExitError, fmt.Errorf("reconcile: %d problem(s) remain; fix them and run `volctl reconcile` again", len(rep.Problems)))
	case recErr != nil:
		failed = recErr
	}
	if err != nil {
		return joinUnprinted(failed, err)
	}
	return failed
}
