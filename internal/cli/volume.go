package cli

import "github.com/spf13/cobra"

func newCmdVolume(f *Factory) *cobra.Command {
	return parentCmd("volume", "Register, create, claim, release and inspect CSI volumes", "",
		newCmdVolumeRegister(f, nil),
		newCmdVolumeCreate(f, nil),
		withListAliases(newCmdVolumeStatus(f, nil)),
		newCmdVolumeClaim(f, nil),
		newCmdVolumeRelease(f, nil),
		newCmdVolumeDetach(f, nil),
		newCmdVolumeDeregister(f, nil),
		newCmdVolumeDelete(f, nil),
		newCmdVolumeExpand(f, nil),
		newCmdVolumeSnapshot(f),
	)
}
