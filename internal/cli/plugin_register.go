package cli

import (
	"errors"

	"github.com/spf13/cobra"
)

// PluginRegisterOptions are the inputs of the command. TODO(issue 4): stub until implemented.
type PluginRegisterOptions struct{}

func newCmdPluginRegister(f *Factory, runF func(*PluginRegisterOptions) error) *cobra.Command {
	return &cobra.Command{
		Use:   "register FILE | --id ID --socket PATH",
		Short: "Register a CSI plugin",
		RunE:  func(cmd *cobra.Command, args []string) error { return errors.New("not implemented yet") },
	}
}
