package cli

import "github.com/spf13/cobra"

func newCmdVolume(f *Factory, args []string) *cobra.Command {
	return parentCmd("volume", "Register, create, claim, release and inspect CSI volumes", "",
		subcommandsFor(f, volumeCommands, args)...)
}

// volumeCommands are volume's subcommands, in the order help lists them.
var volumeCommands = []topCommand{
	{name: "register", make: func(f *Factory) *cobra.Command { return newCmdVolumeRegister(f, nil) }},
	{name: "create", make: func(f *Factory) *cobra.Command { return newCmdVolumeCreate(f, nil) }},
	{name: "status", make: func(f *Factory) *cobra.Command { return withListAliases(newCmdVolumeStatus(f, nil)) }},
	{name: "claim", make: func(f *Factory) *cobra.Command { return newCmdVolumeClaim(f, nil) }},
	{name: "release", make: func(f *Factory) *cobra.Command { return newCmdVolumeRelease(f, nil) }},
	{name: "detach", make: func(f *Factory) *cobra.Command { return newCmdVolumeDetach(f, nil) }},
	{name: "deregister", make: func(f *Factory) *cobra.Command { return newCmdVolumeDeregister(f, nil) }},
	{name: "delete", make: func(f *Factory) *cobra.Command { return newCmdVolumeDelete(f, nil) }},
	{name: "expand", make: func(f *Factory) *cobra.Command { return newCmdVolumeExpand(f, nil) }},
	{name: "snapshot", make: newCmdVolumeSnapshot},
}
