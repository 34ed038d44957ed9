package cli

import (
	"errors"

	"github.com/spf13/cobra"
)

// TODO(issue 3): implemented by the CSI adapter work.
func newCmdPluginProbe(f *Factory, runF func() error) *cobra.Command {
	return &cobra.Command{
		Use:   "probe --socket PATH",
		Short: "Fingerprint and probe any CSI plugin once",
		RunE:  func(cmd *cobra.Command, args []string) error { return errors.New("not implemented") },
	}
}
