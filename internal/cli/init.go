package cli

import (
	"errors"

	"github.com/spf13/cobra"
)

// TODO(issue 2): implemented by the spec work.
func newCmdInit(f *Factory, runF func() error) *cobra.Command {
	return &cobra.Command{
		Use:   "init [volume|plugin|group] [FILE]",
		Short: "Write a commented example spec",
		RunE:  func(cmd *cobra.Command, args []string) error { return errors.New("not implemented") },
	}
}
