package cli

import (
	"errors"

	"github.com/spf13/cobra"
)

// VolumeDetachOptions are the inputs of the command. TODO(issue 5): stub until implemented.
type VolumeDetachOptions struct{}

func newCmdVolumeDetach(f *Factory, runF func(*VolumeDetachOptions) error) *cobra.Command {
	return &cobra.Command{
		Use:   "detach VOLUME",
		Short: "Release every claim on a volume on this host",
		RunE:  func(cmd *cobra.Command, args []string) error { return errors.New("not implemented yet") },
	}
}
