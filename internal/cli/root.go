package cli

import (
	"fmt"

	"github.com/spf13/cobra"
)

// NewRootCmd builds the volctl command tree.
func NewRootCmd(f *Factory) *cobra.Command {
	root := &cobra.Command{
		Use:   "volctl",
		Short: "Orchestrate CSI volumes on one host",
		Long: `volctl orchestrates CSI volumes on one host, as Nomad's CSI subsystem does in a cluster.
It reads Nomad volume specs, validates them, and runs the claim, publish and release lifecycle
against CSI plugins on local unix sockets. State lives in one SQLite file in the state dir.`,
		SilenceUsage:  true,
		SilenceErrors: true,
	}
	root.SetIn(f.IO.In)
	root.SetOut(f.IO.Out)
	root.SetErr(f.IO.ErrOut)
	root.SetFlagErrorFunc(func(cmd *cobra.Command, err error) error {
		return &flagError{err: fmt.Errorf("%w\nSee '%s --help'.", err, cmd.CommandPath())}
	})

	pf := root.PersistentFlags()
	pf.StringVar(&f.stateDirFlag, "state-dir", "", "state directory (default $VOLCTL_STATE_DIR, /var/lib/volctl as root, else $XDG_STATE_HOME/volctl)")
	pf.BoolVarP(&f.verbose, "verbose", "v", false, "log debug output and CSI RPC traces (secrets redacted) to stderr")

	root.AddCommand(
		newCmdVersion(f),
		newCmdValidate(f, nil),
		newCmdInit(f, nil),
		newCmdPlugin(f),
		newCmdVolume(f),
		newCmdGroup(f),
		newCmdRegister(f, nil),
		newCmdCreate(f, nil),
		newCmdStatus(f, nil),
		newCmdReconcile(f, nil),
		newCmdAgent(f, nil),
		newCmdTUI(f, nil),
		newCmdQuickstart(f, nil),
	)
	return root
}

// exactArgs and friends wrap cobra's argument checks so their errors exit 2 like flag errors.
func argsChecker(check cobra.PositionalArgs) cobra.PositionalArgs {
	return func(cmd *cobra.Command, args []string) error {
		if err := check(cmd, args); err != nil {
			return &flagError{err: fmt.Errorf("%w\nSee '%s --help'.", err, cmd.CommandPath())}
		}
		return nil
	}
}

func exactArgs(n int) cobra.PositionalArgs        { return argsChecker(cobra.ExactArgs(n)) }
func maximumArgs(n int) cobra.PositionalArgs      { return argsChecker(cobra.MaximumNArgs(n)) }
func minimumArgs(n int) cobra.PositionalArgs      { return argsChecker(cobra.MinimumNArgs(n)) }
func rangeArgs(min, max int) cobra.PositionalArgs { return argsChecker(cobra.RangeArgs(min, max)) }
