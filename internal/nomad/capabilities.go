package nomad

import (
	"fmt"

	"github.com/volctl/volctl/internal/spec"
)

// CapabilitiesRefused says why Nomad may refuse to register a volume of capabilities caps,
// which volctl takes: a block-device capability beside any other. At a registration Nomad
// asks the plugin's ControllerValidateVolumeCapabilities for all of a volume's capabilities at
// once, then compares each requested capability with every one the plugin confirmed
// (plugins/csi compareCapabilities, through 2.0.5 at least): a file-system one passes on the
// first confirmed capability equal to it, but a block-device one never passes early, and
// fails on any confirmed capability other than itself, a file-system one ("'file-system'
// access type was not requested but was validated by the controller") or one of another
// access mode ("requested access mode ..."). So a plugin that confirms the capabilities it
// was asked, as the CSI spec has it (volctl's own plugin does), has such a volume refused;
// one that confirms without echoing them has it taken. "" when Nomad takes caps; the caller
// says what to do.
func CapabilitiesRefused(caps []spec.Capability) string {
	for i, c := range caps {
		if c.AttachmentMode != spec.BlockDevice {
			continue
		}
		for j, o := range caps {
			if j != i && o != c {
				return fmt.Sprintf("its capability %s/%s is beside %s/%s, and Nomad refuses to register a volume with a block-device capability beside another "+
					"when its plugin confirms the capabilities it is asked to validate, as the CSI spec has it (\"'file-system' access type was not requested but was validated by the controller\", "+
					"or \"requested access mode ...\")",
					c.AccessMode, c.AttachmentMode, o.AccessMode, o.AttachmentMode)
			}
		}
	}
	return ""
}
