package cli

import (
	"github.com/spf13/cobra"

	"github.com/volctl/volctl/internal/spec"
)

// VolumeCreateOptions are the inputs of the command; see VolumeSubmitOptions.
type VolumeCreateOptions = VolumeSubmitOptions

func newCmdVolumeCreate(f *Factory, runF func(*VolumeCreateOptions) error) *cobra.Command {
	return newCmdVolumeSubmit(f, spec.VerbCreate, "Create volumes through their plugin", runF)
}
