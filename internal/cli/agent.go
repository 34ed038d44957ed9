package cli

import (
	"errors"

	"github.com/spf13/cobra"
)

// AgentOptions are the inputs of the command. TODO(issue 6): stub until implemented.
type AgentOptions struct{}

func newCmdAgent(f *Factory, runF func(*AgentOptions) error) *cobra.Command {
	return &cobra.Command{
		Use:   "agent",
		Short: "Supervise plugins, probe health, restore and GC claims",
		RunE:  func(cmd *cobra.Command, args []string) error { return errors.New("not implemented yet") },
	}
}
