package cli

import (
	"context"
	"fmt"
	"strings"

	"github.com/spf13/cobra"

	"github.com/volctl/volctl/internal/engine"
	"github.com/volctl/volctl/internal/iostreams"
)

// DeregisterOptions are the inputs of `volctl plugin deregister` and `volctl volume deregister`.
type DeregisterOptions struct {
	IO      *iostreams.IOStreams
	Engine  func(context.Context) (*engine.Engine, error)
	Confirm func(yes bool, action string) error
	// Stored is Engine when the state dir holds a database, nil without one: the look before
	// the question for a volume (confirmedOnVolume); volume deregister's. nil: no look.
	Stored func(context.Context) (*engine.Engine, error)

	ID    string
	Force bool
	Yes   bool
}

func newCmdPluginDeregister(f *Factory, runF func(*DeregisterOptions) error) *cobra.Command {
	opts := &DeregisterOptions{IO: f.IO, Engine: f.Engine, Confirm: f.confirm, Stored: f.storedEngine}
	cmd := &cobra.Command{
		Use:   "deregister ID",
		Short: "Forget a registered plugin",
		Long: `Forget a registered plugin. The plugin itself keeps running; volctl stops talking to it.

It is refused while volumes use the plugin (exit 4): deregister or delete them first. It is
refused too while snapshots made through it are recorded, since they are deleted through the
plugin: delete them first (volctl volume snapshot delete PLUGIN SNAPSHOT_ID). --force forgets
the plugin anyway, leaving those volumes without a plugin and the snapshots recorded, still
deletable through the socket they were made on while the same driver answers there; it asks
first on a terminal and needs --yes otherwise. Those volumes keep the plugin's socket: their
storage is not registered again, nor claimed beside them, through another plugin ID registered
on that socket while the same driver answers there. A delete cut short (killed, or its answer never
came) of a snapshot volctl does not record is forgotten with the plugin, named in the event
log (plugin-deregister): nothing says which driver it was for, and reconcile would send it to
whatever plugin is registered under the ID next. Such a snapshot, if the plugin still has it,
is left to the storage provider's tools.

It is refused, even with --force, while a volume is recorded attached through the plugin with
no claim (a forced detach could not send ControllerUnpublishVolume, which is owed): nothing
would be left to send it through. volctl reconcile sends it once the plugin answers; volctl
volume deregister VOLUME --force sends it too or, if the plugin still cannot take it, forgets
the attachment, saying so.`,
		Example: `  volctl plugin deregister hostpath
  volctl plugin deregister hostpath --force --yes`,
		Args: exactArgs(1),
		RunE: runOpts(opts, idArg(&opts.ID), runF, pluginDeregisterRun),
	}
	cmd.Flags().BoolVar(&opts.Force, "force", false, "deregister even while volumes use the plugin or snapshots made through it are recorded")
	addYesFlag(cmd, &opts.Yes, "for --force off a terminal")
	return cmd
}

func pluginDeregisterRun(ctx context.Context, opts *DeregisterOptions) error {
	var action string // asked for --force only
	if opts.Force {
		action = fmt.Sprintf("Deregister plugin %q even if volumes use it", opts.ID)
	}
	// A plugin not registered is said before --force's question, as the volume commands say a
	// volume not recorded (confirmedOnPlugin): it asked of a typo, then said "not registered"
	// after a yes (TestDestructiveCommandsOnAVolumeNotRecordedDoNotAsk).
	return deregisterRun(ctx, opts, action, "Plugin", confirmedOnPlugin, func(e *engine.Engine, ctx context.Context, id string, force bool) ([]string, error) {
		return nil, e.DeregisterPlugin(ctx, id, force)
	}, nil)
}

// confirmer is confirmedOnVolume or confirmedOnPlugin: the question, after a look at what it
// is about.
type confirmer func(ctx context.Context, ios *iostreams.IOStreams, confirm func(yes bool, action string) error, yes bool, action string,
	open, stored func(context.Context) (*engine.Engine, error), what, id string) (*engine.Engine, error)

// deregisterRun asks before action (unless it is empty), looking first with confirmed, then
// forgets opts.ID through deregister, prints the warnings it returns on stderr, and says so,
// naming it with noun; did, when not nil, is what it did on the way, said above (and also when
// it failed).
func deregisterRun(ctx context.Context, opts *DeregisterOptions, action, noun string, confirmed confirmer,
	deregister func(e *engine.Engine, ctx context.Context, id string, force bool) ([]string, error), did func() string) error {
	e, err := confirmed(ctx, opts.IO, opts.Confirm, opts.Yes, action, opts.Engine, opts.Stored,
		fmt.Sprintf("deregister %s %q", strings.ToLower(noun), opts.ID), opts.ID)
	if err != nil {
		return err
	}
	// The warnings may word plugin data (the node a forced deregister forgets an attachment
	// to), which a plugin may have echoed a secret into, and that secret may be the volume's
	// own, gone from the state with it: the scrubber is taken before.
	redact, err := e.Redactor(context.WithoutCancel(ctx))
	if err != nil {
		return fmt.Errorf("reading the state to keep secrets out of what the deregistration says: %w", err)
	}
	// A progress line, on a terminal, as a delete draws: a deregistration waits for the
	// volume's (or each volume's) lock while another volctl works on it, and said nothing.
	pctx, done := startProgress(ctx, opts.IO, false)
	warnings, err := deregister(e, pctx, opts.ID, opts.Force)
	done()
	for _, w := range warnings {
		fmt.Fprintf(opts.IO.ErrOut, "Warning: %s\n", escapeLines(redact(w)))
	}
	var lines string
	if did != nil {
		lines = did() // what it did on the way (claims --force released), said even if it failed
	}
	if err != nil {
		if lines != "" {
			if werr := printDone(opts.IO.Out, lines, "%s %q: what it did before the failure", strings.ToLower(noun), opts.ID); werr != nil {
				return joinUnprinted(err, werr)
			}
		}
		return err
	}
	return printDone(opts.IO.Out, lines+fmt.Sprintf("%s %q deregistered\n", noun, opts.ID), "%s %q deregistered", noun, opts.ID)
}
