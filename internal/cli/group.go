package cli

import (
	"errors"

	"github.com/spf13/cobra"
)

// GroupRunOptions are the inputs of the command. TODO(issue 5): stub until implemented.
type GroupRunOptions struct{}

func newCmdGroupRun(f *Factory, runF func(*GroupRunOptions) error) *cobra.Command {
	return &cobra.Command{
		Use:   "run FILE",
		Short: "Run a group: claim every volume of every alloc",
		RunE:  func(cmd *cobra.Command, args []string) error { return errors.New("not implemented yet") },
	}
}

// GroupStatusOptions are the inputs of the command. TODO(issue 5): stub until implemented.
type GroupStatusOptions struct{}

func newCmdGroupStatus(f *Factory, runF func(*GroupStatusOptions) error) *cobra.Command {
	return &cobra.Command{
		Use:   "status [NAME]",
		Short: "Show groups and their allocs",
		RunE:  func(cmd *cobra.Command, args []string) error { return errors.New("not implemented yet") },
	}
}

// GroupStopOptions are the inputs of the command. TODO(issue 5): stub until implemented.
type GroupStopOptions struct{}

func newCmdGroupStop(f *Factory, runF func(*GroupStopOptions) error) *cobra.Command {
	return &cobra.Command{
		Use:   "stop NAME",
		Short: "Stop a group and release its claims",
		RunE:  func(cmd *cobra.Command, args []string) error { return errors.New("not implemented yet") },
	}
}

func newCmdGroup(f *Factory) *cobra.Command {
	cmd := &cobra.Command{Use: "group", Short: "Run groups of allocs that claim volumes"}
	cmd.AddCommand(newCmdGroupRun(f, nil), newCmdGroupStatus(f, nil), newCmdGroupStop(f, nil))
	return cmd
}
