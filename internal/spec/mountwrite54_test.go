package spec

import (
	"strings"
	"testing"

	"github.com/hashicorp/hcl/v2"
)

// TestVolumeMountThatWritesAReadOnlyVolumeIsWarnedOf: a volume_mount with read_only = false of a
// volume block that is read_only is claimed to read and published read-only, so the alloc's
// writes fail there ("Read-only file system"), while validate said "valid". It is warned of, at
// the mount's read_only; a mount that leaves read_only out, says true, or mounts a volume block
// that writes is not.
func TestVolumeMountThatWritesAReadOnlyVolumeIsWarnedOf(t *testing.T) {
	group := func(volumeRO, mount string) string {
		return "group \"g\" {\n  volume \"d\" {\n    type = \"csi\"\n    source = \"v\"\n" +
			"    access_mode = \"multi-node-multi-writer\"\n    attachment_mode = \"file-system\"\n    read_only = " + volumeRO + "\n  }\n" +
			"  volume_mount {\n    volume = \"d\"\n    destination = \"/srv/d\"\n" + mount + "  }\n}\n"
	}
	for _, tt := range []struct {
		name, src string
		warned    bool
	}{
		{"writes a read-only volume", group("true", "    read_only = false\n"), true},
		{"says nothing", group("true", ""), false},
		{"says read-only", group("true", "    read_only = true\n"), false},
		{"volume writes", group("false", "    read_only = false\n"), false},
	} {
		t.Run(tt.name, func(t *testing.T) {
			_, diags := NewParser().ParseGroup("g.hcl", []byte(tt.src))
			if diags.HasErrors() {
				t.Fatalf("%v", diags)
			}
			found := diagsNamed(diags, "Volume mount cannot write")
			switch {
			case !tt.warned && len(found) != 0:
				t.Errorf("warned: %v", found[0])
			case !tt.warned:
			case len(found) != 1:
				t.Errorf("diagnostics %v; want one warning", diags)
			case found[0].Severity != hcl.DiagWarning || found[0].Subject == nil || found[0].Subject.Start.Line != 12 ||
				!strings.Contains(found[0].Detail, `the volume "d" is requested read_only`):
				t.Errorf("warning %+v at %v; want one at line 12 naming the volume block", found[0], found[0].Subject)
			}
		})
	}
}
