package cli

import (
	"errors"

	"github.com/spf13/cobra"
)

// VolumeDeregisterOptions are the inputs of the command. TODO(issue 4): stub until implemented.
type VolumeDeregisterOptions struct{}

func newCmdVolumeDeregister(f *Factory, runF func(*VolumeDeregisterOptions) error) *cobra.Command {
	return &cobra.Command{
		Use:   "deregister ID",
		Short: "Forget a volume without touching its storage",
		RunE:  func(cmd *cobra.Command, args []string) error { return errors.New("not implemented yet") },
	}
}
