package cli

import (
	"errors"

	"github.com/spf13/cobra"
)

// VolumeExpandOptions are the inputs of the command. TODO(issue 6): stub until implemented.
type VolumeExpandOptions struct{}

func newCmdVolumeExpand(f *Factory, runF func(*VolumeExpandOptions) error) *cobra.Command {
	return &cobra.Command{
		Use:   "expand VOLUME --size SIZE",
		Short: "Grow a volume",
		RunE:  func(cmd *cobra.Command, args []string) error { return errors.New("not implemented yet") },
	}
}
