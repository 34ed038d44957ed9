package cli

import (
	"errors"

	"github.com/spf13/cobra"
)

// SnapshotCreateOptions are the inputs of the command. TODO(issue 6): stub until implemented.
type SnapshotCreateOptions struct{}

func newCmdVolumeSnapshotCreate(f *Factory, runF func(*SnapshotCreateOptions) error) *cobra.Command {
	return &cobra.Command{
		Use:   "create VOLUME [NAME]",
		Short: "Snapshot a volume",
		RunE:  func(cmd *cobra.Command, args []string) error { return errors.New("not implemented yet") },
	}
}

// SnapshotListOptions are the inputs of the command. TODO(issue 6): stub until implemented.
type SnapshotListOptions struct{}

func newCmdVolumeSnapshotList(f *Factory, runF func(*SnapshotListOptions) error) *cobra.Command {
	return &cobra.Command{
		Use:   "list",
		Short: "List snapshots",
		RunE:  func(cmd *cobra.Command, args []string) error { return errors.New("not implemented yet") },
	}
}

// SnapshotDeleteOptions are the inputs of the command. TODO(issue 6): stub until implemented.
type SnapshotDeleteOptions struct{}

func newCmdVolumeSnapshotDelete(f *Factory, runF func(*SnapshotDeleteOptions) error) *cobra.Command {
	return &cobra.Command{
		Use:   "delete PLUGIN SNAPSHOT_ID",
		Short: "Delete a snapshot",
		RunE:  func(cmd *cobra.Command, args []string) error { return errors.New("not implemented yet") },
	}
}

func newCmdVolumeSnapshot(f *Factory) *cobra.Command {
	cmd := &cobra.Command{Use: "snapshot", Short: "Create, list and delete volume snapshots"}
	cmd.AddCommand(newCmdVolumeSnapshotCreate(f, nil), newCmdVolumeSnapshotList(f, nil), newCmdVolumeSnapshotDelete(f, nil))
	return cmd
}
