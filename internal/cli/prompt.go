package cli

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"strings"

	"github.com/spf13/cobra"

	"github.com/volctl/volctl/internal/engine"
	"github.com/volctl/volctl/internal/iostreams"
)

// confirm asks a yes/no question on the terminal before a destructive action. With yes set it
// does not ask; off a terminal it refuses (exit 2) and says to pass --yes; "no" exits 3.
func (f *Factory) confirm(yes bool, action string) error {
	if yes {
		return nil
	}
	if !f.IO.CanPrompt() {
		return usageError("%s: not on a terminal, pass --yes to confirm", action)
	}
	fmt.Fprintf(f.IO.ErrOut, "%s? [y/N] ", action)
	line, err := bufio.NewReader(f.IO.In).ReadString('\n')
	if err != nil && line == "" {
		return withCode(ExitDeclined, errors.New("declined: no answer"))
	}
	switch strings.ToLower(strings.TrimSpace(line)) {
	case "y", "yes":
		return nil
	}
	return withCode(ExitDeclined, fmt.Errorf("declined: %s", action))
}

// addYesFlag adds --yes (-y), which answers confirm's question before it is asked; when says
// when it is needed.
func addYesFlag(cmd *cobra.Command, yes *bool, when string) {
	cmd.Flags().BoolVarP(yes, "yes", "y", false, "do not ask for confirmation (needed "+when+")")
}

// confirmedEngine asks before action (nothing when action is empty), then opens the engine: a
// command that is declined, or off a terminal without --yes, leaves the state alone and does
// not even create the state dir.
func confirmedEngine(ctx context.Context, confirm func(yes bool, action string) error, yes bool, action string,
	open func(context.Context) (*engine.Engine, error)) (*engine.Engine, error) {
	if action != "" {
		if err := confirm(yes, action); err != nil {
			return nil, err
		}
	}
	return open(ctx)
}

// confirmedOnVolume is confirmedEngine for an action on volume id (volume delete, deregister,
// detach): before it asks on a terminal, the volume is looked up, and one the state dir does not
// record ends the command with its not-found, as the action would after the question (what
// names the action: "delete volume \"x\""), without asking whether to delete what is not there
// (TestDestructiveCommandsOnAVolumeNotRecordedDoNotAsk). The look opens the engine only when
// the state dir holds a database (stored; nil in tests that give none): a state dir without one
// records nothing, and a decline leaves it uncreated. Off a terminal nothing is asked, and
// nothing looked at: the refusal without --yes stays what it is. Any other answer of the look
// (the volume found, an ID volctl refuses, a state that cannot be read) leaves the question to
// be asked and the action to say the rest.
func confirmedOnVolume(ctx context.Context, ios *iostreams.IOStreams, confirm func(yes bool, action string) error, yes bool, action string,
	open, stored func(context.Context) (*engine.Engine, error), what, id string) (*engine.Engine, error) {
	if action != "" && !yes && stored != nil && ios.CanPrompt() {
		if e, err := stored(ctx); err == nil && e != nil {
			if verr := e.VolumeRecorded(ctx, id); errors.Is(verr, engine.ErrNotFound) {
				return nil, fmt.Errorf("%s: %w", what, verr)
			}
		}
	}
	return confirmedEngine(ctx, confirm, yes, action, open)
}
