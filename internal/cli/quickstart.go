package cli

import (
	"errors"

	"github.com/spf13/cobra"
)

// QuickstartOptions are the inputs of the command. TODO(issue 5): stub until implemented.
type QuickstartOptions struct{}

func newCmdQuickstart(f *Factory, runF func(*QuickstartOptions) error) *cobra.Command {
	return &cobra.Command{
		Use:   "quickstart",
		Short: "Run the whole lifecycle with the built-in plugin",
		RunE:  func(cmd *cobra.Command, args []string) error { return errors.New("not implemented yet") },
	}
}
