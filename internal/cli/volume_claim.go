package cli

import (
	"errors"

	"github.com/spf13/cobra"
)

// VolumeClaimOptions are the inputs of the command. TODO(issue 5): stub until implemented.
type VolumeClaimOptions struct{}

func newCmdVolumeClaim(f *Factory, runF func(*VolumeClaimOptions) error) *cobra.Command {
	return &cobra.Command{
		Use:   "claim VOLUME --alloc ALLOC",
		Short: "Claim and publish a volume for an alloc",
		RunE:  func(cmd *cobra.Command, args []string) error { return errors.New("not implemented yet") },
	}
}
