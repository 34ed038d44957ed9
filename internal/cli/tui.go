package cli

import (
	"errors"

	"github.com/spf13/cobra"
)

// TUIOptions are the inputs of the command. TODO(issue 7): stub until implemented.
type TUIOptions struct{}

func newCmdTUI(f *Factory, runF func(*TUIOptions) error) *cobra.Command {
	return &cobra.Command{
		Use:   "tui",
		Short: "Full-screen dashboard",
		RunE:  func(cmd *cobra.Command, args []string) error { return errors.New("not implemented yet") },
	}
}
