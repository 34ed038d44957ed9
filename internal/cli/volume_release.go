package cli

import (
	"errors"

	"github.com/spf13/cobra"
)

// VolumeReleaseOptions are the inputs of the command. TODO(issue 5): stub until implemented.
type VolumeReleaseOptions struct{}

func newCmdVolumeRelease(f *Factory, runF func(*VolumeReleaseOptions) error) *cobra.Command {
	return &cobra.Command{
		Use:   "release VOLUME --alloc ALLOC",
		Short: "Release an alloc's claim",
		RunE:  func(cmd *cobra.Command, args []string) error { return errors.New("not implemented yet") },
	}
}
