package cli

import (
	"errors"

	"github.com/spf13/cobra"
)

// RegisterOptions are the inputs of the command. TODO(issue 4): stub until implemented.
type RegisterOptions struct{}

func newCmdRegister(f *Factory, runF func(*RegisterOptions) error) *cobra.Command {
	return &cobra.Command{
		Use:   "register FILE... | -",
		Short: "Register volumes (same as volume register)",
		RunE:  func(cmd *cobra.Command, args []string) error { return errors.New("not implemented yet") },
	}
}
