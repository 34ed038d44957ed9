package cli

import (
	"fmt"

	"github.com/spf13/cobra"
	"github.com/volctl/volctl/internal/buildinfo"
)

func newCmdVersion(f *Factory) *cobra.Command {
	return &cobra.Command{
		Use:   "version",
		Short: "Print the volctl version",
		Args:  exactArgs(0),
		RunE: func(cmd *cobra.Command, args []string) error {
			_, err := fmt.Fprintln(f.IO.Out, buildinfo.String())
			return err
		},
	}
}
