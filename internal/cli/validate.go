package cli

import (
	"errors"

	"github.com/spf13/cobra"
)

// ValidateOptions are the inputs of `volctl validate`.
type ValidateOptions struct {
	IO    *Factory
	Verb  string
	Files []string
	JSON  bool
}

// TODO(issue 2): implemented by the spec work.
func newCmdValidate(f *Factory, runF func(*ValidateOptions) error) *cobra.Command {
	return &cobra.Command{
		Use:   "validate [--for register|create] FILE... | -",
		Short: "Validate volume, plugin and group specs",
		RunE:  func(cmd *cobra.Command, args []string) error { return errors.New("not implemented") },
	}
}
