package cli

import (
	"github.com/spf13/cobra"

	"github.com/volctl/volctl/internal/spec"
)

// VolumeRegisterOptions are the inputs of the command; see VolumeSubmitOptions.
type VolumeRegisterOptions = VolumeSubmitOptions

func newCmdVolumeRegister(f *Factory, runF func(*VolumeRegisterOptions) error) *cobra.Command {
	return newCmdVolumeSubmit(f, spec.VerbRegister, "Register existing volumes", runF)
}
