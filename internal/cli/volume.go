package cli

import "github.com/spf13/cobra"

func newCmdVolume(f *Factory, args []string) *cobra.Command {
	return parentCmd("volume", "Register, create, claim, release and inspect CSI volumes", "",
		subcommandsFor(f, volumeCommands, args)...)
}

// volumeCommands are volume's subcommands, in the order help lists them.
var volumeCommands = []topCommand{
	{"register", func(f *Factory) *cobra.Command { return newCmdVolumeRegister(f, nil) }},
	{"create", func(f *Factory) *cobra.Command { return newCmdVolumeCreate(f, nil) }},
	{"status", func(f *Factory) *cobra.Command { return withListAliases(newCmdVolumeStatus(f, nil)) }},
	{"claim", func(f *Factory) *cobra.Command { return newCmdVolumeClaim(f, nil) }},
	{"release", func(f *Factory) *cobra.Command { return newCmdVolumeRelease(f, nil) }},
	{"detach", func(f *Factory) *cobra.Command { return newCmdVolumeDetach(f, nil) }},
	{"deregister", func(f *Factory) *cobra.Command { return newCmdVolumeDeregister(f, nil) }},
	{"delete", func(f *Factory) *cobra.Command { return newCmdVolumeDelete(f, nil) }},
	{"expand", func(f *Factory) *cobra.Command { return newCmdVolumeExpand(f, nil) }},
	{"snapshot", newCmdVolumeSnapshot},
}
