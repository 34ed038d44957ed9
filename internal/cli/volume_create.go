package cli

import (
	"errors"

	"github.com/spf13/cobra"
)

// VolumeCreateOptions are the inputs of the command. TODO(issue 4): stub until implemented.
type VolumeCreateOptions struct{}

func newCmdVolumeCreate(f *Factory, runF func(*VolumeCreateOptions) error) *cobra.Command {
	return &cobra.Command{
		Use:   "create FILE... | -",
		Short: "Create volumes through their plugin",
		RunE:  func(cmd *cobra.Command, args []string) error { return errors.New("not implemented yet") },
	}
}
