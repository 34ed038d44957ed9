package cli

import (
	"errors"

	"github.com/spf13/cobra"
)

// VolumeDeleteOptions are the inputs of the command. TODO(issue 4): stub until implemented.
type VolumeDeleteOptions struct{}

func newCmdVolumeDelete(f *Factory, runF func(*VolumeDeleteOptions) error) *cobra.Command {
	return &cobra.Command{
		Use:   "delete ID",
		Short: "Delete a volume and its storage",
		RunE:  func(cmd *cobra.Command, args []string) error { return errors.New("not implemented yet") },
	}
}
