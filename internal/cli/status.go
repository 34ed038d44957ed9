package cli

import (
	"errors"

	"github.com/spf13/cobra"
)

// StatusOptions are the inputs of the command. TODO(issue 4): stub until implemented.
type StatusOptions struct{}

func newCmdStatus(f *Factory, runF func(*StatusOptions) error) *cobra.Command {
	return &cobra.Command{
		Use:   "status [ID]",
		Short: "Summary of plugins, volumes and unsettled claims, or one volume",
		RunE:  func(cmd *cobra.Command, args []string) error { return errors.New("not implemented yet") },
	}
}
