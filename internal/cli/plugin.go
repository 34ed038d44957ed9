package cli

import "github.com/spf13/cobra"

func newCmdPlugin(f *Factory) *cobra.Command {
	return parentCmd("plugin", "Register, inspect and serve CSI plugins", "",
		newCmdPluginRegister(f, nil),
		withListAliases(newCmdPluginStatus(f, nil)),
		newCmdPluginDeregister(f, nil),
		newCmdPluginProbe(f, nil),
		newCmdPluginServe(f),
	)
}
