package cli

import (
	"errors"

	"github.com/spf13/cobra"
)

// PluginStatusOptions are the inputs of the command. TODO(issue 4): stub until implemented.
type PluginStatusOptions struct{}

func newCmdPluginStatus(f *Factory, runF func(*PluginStatusOptions) error) *cobra.Command {
	return &cobra.Command{
		Use:   "status [ID]",
		Short: "Show plugins with a live probe",
		RunE:  func(cmd *cobra.Command, args []string) error { return errors.New("not implemented yet") },
	}
}
