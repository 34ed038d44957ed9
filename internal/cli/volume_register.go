package cli

import (
	"errors"

	"github.com/spf13/cobra"
)

// VolumeRegisterOptions are the inputs of the command. TODO(issue 4): stub until implemented.
type VolumeRegisterOptions struct{}

func newCmdVolumeRegister(f *Factory, runF func(*VolumeRegisterOptions) error) *cobra.Command {
	return &cobra.Command{
		Use:   "register FILE... | -",
		Short: "Register existing volumes",
		RunE:  func(cmd *cobra.Command, args []string) error { return errors.New("not implemented yet") },
	}
}
