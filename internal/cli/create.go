package cli

import (
	"errors"

	"github.com/spf13/cobra"
)

// CreateOptions are the inputs of the command. TODO(issue 4): stub until implemented.
type CreateOptions struct{}

func newCmdCreate(f *Factory, runF func(*CreateOptions) error) *cobra.Command {
	return &cobra.Command{
		Use:   "create FILE... | -",
		Short: "Create volumes (same as volume create)",
		RunE:  func(cmd *cobra.Command, args []string) error { return errors.New("not implemented yet") },
	}
}
