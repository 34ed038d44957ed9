package cli

import (
	"context"
	"fmt"

	"github.com/spf13/cobra"

	"github.com/volctl/volctl/internal/engine"
)

func newCmdVolumeDeregister(f *Factory, runF func(*DeregisterOptions) error) *cobra.Command {
	opts := &DeregisterOptions{IO: f.IO, Engine: f.Engine, Confirm: f.confirm}
	cmd := &cobra.Command{
		Use:   "deregister ID",
		Short: "Forget a volume without touching its storage",
		Long: `Forget a volume: its record goes, its storage stays where it is (volctl volume delete
removes the storage too).

It is refused while the volume has live claims, naming them (exit 4). --force releases the
claims first, through the plugin (volctl volume detach --force is for a plugin that is gone).
It asks first on a terminal and needs --yes otherwise.`,
		Example: `  volctl volume deregister db --yes
  volctl volume deregister db --force --yes`,
		Args: exactArgs(1),
		RunE: runOpts(opts, firstArg(&opts.ID), runF, volumeDeregisterRun),
	}
	cmd.Flags().BoolVar(&opts.Force, "force", false, "release the volume's claims first")
	addYesFlag(cmd, &opts.Yes, "off a terminal")
	return cmd
}

func volumeDeregisterRun(ctx context.Context, opts *DeregisterOptions) error {
	action := fmt.Sprintf("Deregister volume %q", opts.ID)
	if opts.Force {
		action += " and release its claims"
	}
	return deregisterRun(ctx, opts, action, "Volume", (*engine.Engine).DeregisterVolume)
}
