package cli

import (
	"errors"

	"github.com/spf13/cobra"
)

// TODO(issue 3): implemented by the hostpath plugin work.
func newCmdPluginServe(f *Factory) *cobra.Command {
	cmd := &cobra.Command{
		Use:   "serve",
		Short: "Serve one of volctl's built-in CSI plugins",
	}
	cmd.AddCommand(&cobra.Command{
		Use:   "hostpath",
		Short: "Serve the directory-backed CSI plugin",
		RunE:  func(cmd *cobra.Command, args []string) error { return errors.New("not implemented") },
	})
	return cmd
}
