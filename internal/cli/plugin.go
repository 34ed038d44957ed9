package cli

import "github.com/spf13/cobra"

func newCmdPlugin(f *Factory) *cobra.Command {
	cmd := &cobra.Command{
		Use:   "plugin",
		Short: "Register, inspect and serve CSI plugins",
	}
	cmd.AddCommand(
		newCmdPluginRegister(f, nil),
		withListAliases(newCmdPluginStatus(f, nil)),
		newCmdPluginDeregister(f, nil),
		newCmdPluginProbe(f, nil),
		newCmdPluginServe(f),
	)
	return cmd
}
