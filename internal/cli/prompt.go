package cli

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"strings"

	"github.com/spf13/cobra"

	"github.com/volctl/volctl/internal/crash"
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
		if err := confirmInterruptibly(ctx, confirm, yes, action); err != nil {
			return nil, err
		}
	}
	return open(ctx)
}

// confirmInterruptibly is confirm, given up on when ctx ends (Ctrl-C, SIGTERM: main catches
// them into the command's context, so they do not end the process): the question's read of
// the terminal took no notice, and volctl waited for a line nobody typed, a second Ctrl-C
// ignored too (TestPromptEndsOnInterrupt). Nothing is decided; the abandoned read ends with
// the process, as a spec's read on standard input does (readInterruptibly).
func confirmInterruptibly(ctx context.Context, confirm func(yes bool, action string) error, yes bool, action string) error {
	if yes || ctx.Done() == nil {
		return confirm(yes, action)
	}
	done := make(chan error, 1)
	crash.Go(func() { done <- confirm(yes, action) })
	select {
	case err := <-done:
		return err
	case <-ctx.Done():
		return fmt.Errorf("%s: interrupted at the question, nothing was done: %w", action, context.Cause(ctx))
	}
}

// confirmedOnVolume is confirmedEngine for an action on volume id (volume delete, deregister,
// detach): before it asks on a terminal, the volume is looked up, and one the state dir does not
// record ends the command with its not-found, as the action would after the question (what
// names the action: "delete volume \"x\""), without asking whether to delete what is not there
// (TestDestructiveCommandsOnAVolumeNotRecordedDoNotAsk). See confirmedAfterLook.
func confirmedOnVolume(ctx context.Context, ios *iostreams.IOStreams, confirm func(yes bool, action string) error, yes bool, action string,
	open, stored func(context.Context) (*engine.Engine, error), what, id string) (*engine.Engine, error) {
	return confirmedAfterLook(ctx, ios, confirm, yes, action, open, stored, what,
		func(e *engine.Engine) error { return e.VolumeRecorded(ctx, id) })
}

// confirmedOnPlugin is confirmedOnVolume for an action through plugin id (volume snapshot
// delete and deregister): one neither registered nor keeping snapshot records (deregistered
// with --force) is its not-found, without the question.
func confirmedOnPlugin(ctx context.Context, ios *iostreams.IOStreams, confirm func(yes bool, action string) error, yes bool, action string,
	open, stored func(context.Context) (*engine.Engine, error), what, id string) (*engine.Engine, error) {
	return confirmedAfterLook(ctx, ios, confirm, yes, action, open, stored, what,
		func(e *engine.Engine) error { return e.SnapshotPluginRecorded(ctx, id) })
}

// confirmedAfterLook is confirmedEngine with a look before the question on a terminal: when
// look says what the action is about is not recorded (engine.ErrNotFound), that is the
// command's error at once, what naming the action. The look opens the engine only when the
// state dir holds a database (stored; nil in tests that give none): a state dir without one
// records nothing, and a decline leaves it uncreated. Off a terminal nothing is asked, and
// nothing looked at: the refusal without --yes stays what it is. Any other answer of the look
// (found, an ID volctl refuses, a state that cannot be read) leaves the question to be asked
// and the action to say the rest.
func confirmedAfterLook(ctx context.Context, ios *iostreams.IOStreams, confirm func(yes bool, action string) error, yes bool, action string,
	open, stored func(context.Context) (*engine.Engine, error), what string, look func(*engine.Engine) error) (*engine.Engine, error) {
	if action != "" && !yes && stored != nil && ios.CanPrompt() {
		if e, err := stored(ctx); err == nil && e != nil {
			if lerr := look(e); errors.Is(lerr, engine.ErrNotFound) {
				return nil, fmt.Errorf("%s: %w", what, lerr)
			}
		}
	}
	return confirmedEngine(ctx, confirm, yes, action, open)
}
