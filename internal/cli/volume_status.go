package cli

import (
	"errors"

	"github.com/spf13/cobra"
)

// VolumeStatusOptions are the inputs of the command. TODO(issue 4): stub until implemented.
type VolumeStatusOptions struct{}

func newCmdVolumeStatus(f *Factory, runF func(*VolumeStatusOptions) error) *cobra.Command {
	return &cobra.Command{
		Use:   "status [ID|PREFIX]",
		Short: "Show volumes",
		RunE:  func(cmd *cobra.Command, args []string) error { return errors.New("not implemented yet") },
	}
}
