package cli

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"strings"

	"github.com/spf13/cobra"

	"github.com/volctl/volctl/internal/engine"
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
