package cli

import "github.com/spf13/cobra"

func newCmdPlugin(f *Factory, args []string) *cobra.Command {
	return parentCmd("plugin", "Register, inspect and serve CSI plugins", "", subcommandsFor(f, pluginCommands, args)...)
}

// pluginCommands are plugin's subcommands, in the order help lists them.
var pluginCommands = []topCommand{
	{name: "register", make: func(f *Factory) *cobra.Command { return newCmdPluginRegister(f, nil) }},
	{name: "status", make: func(f *Factory) *cobra.Command { return withListAliases(newCmdPluginStatus(f, nil)) }},
	{name: "deregister", make: func(f *Factory) *cobra.Command { return newCmdPluginDeregister(f, nil) }},
	{name: "probe", make: func(f *Factory) *cobra.Command { return newCmdPluginProbe(f, nil) }},
	{name: "serve", make: newCmdPluginServe},
}
