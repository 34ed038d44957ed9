package cli

import (
	"github.com/spf13/cobra"

	"github.com/volctl/volctl/internal/spec"
)

// CreateOptions are the inputs of the command; see VolumeSubmitOptions.
type CreateOptions = VolumeSubmitOptions

func newCmdCreate(f *Factory, runF func(*CreateOptions) error) *cobra.Command {
	return newCmdVolumeSubmit(f, spec.VerbCreate, "Create volumes through their plugin (same as volume create)", runF)
}
