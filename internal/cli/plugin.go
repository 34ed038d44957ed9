package cli

import "github.com/spf13/cobra"

func newCmdPlugin(f *Factory, args []string) *cobra.Command {
	return parentCmd("plugin", "Register, inspect and serve CSI plugins", "", subcommandsFor(f, pluginCommands, args)...)
}

// pluginCommands are plugin's subcommands, in the order help lists them.
var pluginCommands = []topCommand{
	{"register", func(f *Factory) *cobra.Command { return newCmdPluginRegister(f, nil) }},
	{"status", func(f *Factory) *cobra.Command { return withListAliases(newCmdPluginStatus(f, nil)) }},
	{"deregister", func(f *Factory) *cobra.Command { return newCmdPluginDeregister(f, nil) }},
	{"probe", func(f *Factory) *cobra.Command { return newCmdPluginProbe(f, nil) }},
	{"serve", newCmdPluginServe},
}
