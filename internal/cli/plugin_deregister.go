package cli

import (
	"errors"

	"github.com/spf13/cobra"
)

// PluginDeregisterOptions are the inputs of the command. TODO(issue 4): stub until implemented.
type PluginDeregisterOptions struct{}

func newCmdPluginDeregister(f *Factory, runF func(*PluginDeregisterOptions) error) *cobra.Command {
	return &cobra.Command{
		Use:   "deregister ID",
		Short: "Forget a plugin",
		RunE:  func(cmd *cobra.Command, args []string) error { return errors.New("not implemented yet") },
	}
}
