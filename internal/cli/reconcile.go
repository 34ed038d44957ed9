package cli

import (
	"errors"

	"github.com/spf13/cobra"
)

// ReconcileOptions are the inputs of the command. TODO(issue 5): stub until implemented.
type ReconcileOptions struct{}

func newCmdReconcile(f *Factory, runF func(*ReconcileOptions) error) *cobra.Command {
	return &cobra.Command{
		Use:   "reconcile",
		Short: "Re-drive unsettled claims and restore lost mounts",
		RunE:  func(cmd *cobra.Command, args []string) error { return errors.New("not implemented yet") },
	}
}
