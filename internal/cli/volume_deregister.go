package cli

import (
	"context"
	"fmt"
	"strings"

	"github.com/spf13/cobra"

	"github.com/volctl/volctl/internal/engine"
)

func newCmdVolumeDeregister(f *Factory, runF func(*DeregisterOptions) error) *cobra.Command {
	opts := &DeregisterOptions{IO: f.IO, Engine: f.Engine, Confirm: f.confirm, Stored: f.storedEngine}
	cmd := &cobra.Command{
		Use:   "deregister ID",
		Short: "Forget a volume without touching its storage",
		Long: `Forget a volume: its record goes, its storage stays where it is (volctl volume delete
removes the storage too).

It is refused while the volume has live claims, naming them (exit 4). --force releases the
claims first, through the plugin (volctl volume detach --force is for a plugin that is gone),
and says each one it released ("Released write claim of alloc ..."), also when a release then
fails and the volume stays registered.

It is refused too while the volume is recorded attached to a node with no claim (exit 4): a
forced detach could not send ControllerUnpublishVolume, which is owed (volctl volume status
shows it: attached_to), and volctl reconcile sends it once the plugin answers. --force sends
it first, as reconcile does; if the plugin still cannot take it, --force forgets the
attachment and says so in a warning on stderr and in the event log: detach the volume from
that node with the storage provider's tools.

A volume whose create was interrupted is forgotten with a warning on stderr (and in the event
log) naming its CSI name: the plugin may hold a volume a CreateVolume whose answer was lost
made under that name, to delete with the storage provider's tools. So is one whose delete was
interrupted, naming its external ID: a DeleteVolume whose answer was lost may or may not have
deleted its storage.

It asks first on a terminal (a volume volctl does not record is said not found without asking)
and needs --yes otherwise.`,
		Example: `  volctl volume deregister db --yes
  volctl volume deregister db --force --yes`,
		Args: exactArgs(1),
		RunE: runOpts(opts, idArg(&opts.ID), runF, volumeDeregisterRun),
	}
	cmd.Flags().BoolVar(&opts.Force, "force", false, "release the volume's claims first, and send an owed ControllerUnpublishVolume or else forget the attachment")
	addYesFlag(cmd, &opts.Yes, "off a terminal")
	return cmd
}

func volumeDeregisterRun(ctx context.Context, opts *DeregisterOptions) error {
	action := fmt.Sprintf("Deregister volume %q", opts.ID)
	if opts.Force {
		action += ", release its claims and detach it (forgetting the attachment if its plugin cannot detach it)"
	}
	// What --force released first is said above the deregistration, as a detach says it, and
	// also when the deregistration then fails.
	var released []engine.ClaimInfo
	deregister := func(e *engine.Engine, ctx context.Context, id string, force bool) (warnings []string, err error) {
		released, warnings, err = e.DeregisterVolumeReleasing(ctx, id, force)
		return warnings, err
	}
	return deregisterRun(ctx, opts, action, "Volume", confirmedOnVolume, deregister, func() string {
		var lines strings.Builder
		for _, c := range released {
			fmt.Fprintf(&lines, "Released %s claim of alloc %q\n", c.Mode, c.Alloc)
		}
		return lines.String()
	})
}
