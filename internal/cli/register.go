package cli

import (
	"github.com/spf13/cobra"

	"github.com/volctl/volctl/internal/spec"
)

// RegisterOptions are the inputs of the command; see VolumeSubmitOptions.
type RegisterOptions = VolumeSubmitOptions

func newCmdRegister(f *Factory, runF func(*RegisterOptions) error) *cobra.Command {
	return newCmdVolumeSubmit(f, spec.VerbRegister, "Register existing volumes (same as volume register)", runF)
}
