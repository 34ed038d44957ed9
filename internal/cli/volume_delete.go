package cli

import (
	"context"
	"fmt"

	"github.com/spf13/cobra"

	"github.com/volctl/volctl/internal/engine"
	"github.com/volctl/volctl/internal/iostreams"
)

// VolumeDeleteOptions are the inputs of `volctl volume delete`.
type VolumeDeleteOptions struct {
	IO      *iostreams.IOStreams
	Engine  func(context.Context) (*engine.Engine, error)
	Confirm func(yes bool, action string) error
	// Stored is Engine when the state dir holds a database, nil without one: the look before
	// the question for a volume (confirmedOnVolume). nil: no look.
	Stored func(context.Context) (*engine.Engine, error)

	ID  string
	Yes bool
}

func newCmdVolumeDelete(f *Factory, runF func(*VolumeDeleteOptions) error) *cobra.Command {
	opts := &VolumeDeleteOptions{IO: f.IO, Engine: f.Engine, Confirm: f.confirm, Stored: f.storedEngine}
	cmd := &cobra.Command{
		Use:   "delete ID",
		Short: "Delete a volume's storage through its plugin and forget it",
		Long: `Delete a volume: DeleteVolume through its plugin (the data is gone), then its record.

The volume must have no live claims (exit 4, naming them: release or detach them first) and
its plugin must be able to delete volumes (CREATE_DELETE_VOLUME; otherwise use volctl volume
deregister). A plugin that can say which nodes a volume is published to
(LIST_VOLUMES_PUBLISHED_NODES, with LIST_VOLUMES or GET_VOLUME) is asked first: a volume it
reports published to any node, once what this state dir recorded of it is undone, is not
deleted (exit 4, naming the nodes: another volctl state dir, Nomad, or another volume recorded
here on the same storage holds it; release it there, or detach it with the storage provider's
tools). No flag overrides that. A plugin that cannot say, or whose answer cannot be had, is not
held to it: volctl cannot know, and the delete goes on. A plugin that answers NOT_FOUND has no such volume any more: that counts as
deleted; one that refuses with FAILED_PRECONDITION (in use, or snapshots left) keeps the volume,
ready, exit 4. A plugin with LIST_VOLUMES that answers OK is asked to list its volumes: while it still
lists the volume (deleting it in the background), the volume stays deleting and the command
fails saying so; run it again later. If that listing fails, or takes more than 30 s or 1,000
pages (with the listing before DeleteVolume: the two share that bound), the volume is
forgotten and a warning says it could not be checked. A volume whose
storage another volctl volume also records is not deleted (exit 4,
naming it: volctl volume deregister forgets one), nor one with a snapshot whose create was
interrupted (exit 4, naming it: volctl reconcile finishes that snapshot, volctl volume snapshot
delete removes it). A delete interrupted midway is finished by
the same delete or by volctl reconcile. A volume whose create was interrupted (its answer lost)
is created again under its CSI name first, the only way to learn what the plugin made, and that
is deleted; a plugin refusing the create for good made nothing, and the record is forgotten;
one that made a volume it does not give volctl (an answer without its ID) has the record
forgotten and the command fails, saying it was not deleted and naming the CSI name.
It asks first on a terminal (a volume volctl does not record is said not found without asking)
and needs --yes otherwise.`,
		Example: `  volctl volume delete scratch --yes`,
		Args:    exactArgs(1),
		RunE:    runOpts(opts, idArg(&opts.ID), runF, volumeDeleteRun),
	}
	addYesFlag(cmd, &opts.Yes, "off a terminal")
	return cmd
}

func volumeDeleteRun(ctx context.Context, opts *VolumeDeleteOptions) error {
	e, err := confirmedOnVolume(ctx, opts.IO, opts.Confirm, opts.Yes, fmt.Sprintf("Delete volume %q and its data", opts.ID), opts.Engine, opts.Stored,
		fmt.Sprintf("delete volume %q", opts.ID), opts.ID)
	if err != nil {
		return err
	}
	pctx, done := startProgress(ctx, opts.IO, false)
	err = e.DeleteVolume(pctx, opts.ID)
	done()
	if err != nil {
		return err
	}
	return printDone(opts.IO.Out, fmt.Sprintf("Volume %q deleted\n", opts.ID), "volume %q deleted", opts.ID)
}
