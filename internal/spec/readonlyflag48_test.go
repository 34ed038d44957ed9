package spec

import (
	"strings"
	"testing"

	"github.com/hashicorp/hcl/v2"
)

// TestReadOnlyMountFlagOnAWritableVolumeIsWarnedOf: mount(8)'s "ro" among a volume's mount
// flags mounts every claim read-only, a write claim's too, which is still admitted as the
// volume's writer and keeps the others out; validate said "valid" and the alloc found it could
// not write. A volume only readers may claim, a group volume block that is read_only, and a
// flag that only contains the letters (a credential "ro=...", "errors=remount-ro") are not
// warned of; the warning points at the flag and, as every diagnostic, does not spell a flag.
func TestReadOnlyMountFlagOnAWritableVolumeIsWarnedOf(t *testing.T) {
	volume := func(mode, flags string) string {
		return "id = \"v\"\nname = \"v\"\ntype = \"csi\"\nplugin_id = \"p\"\n" +
			"capability {\n  access_mode = \"" + mode + "\"\n  attachment_mode = \"file-system\"\n}\n" +
			"mount_options {\n  mount_flags = [" + flags + "]\n}\n"
	}
	group := func(readOnly, flags string) string {
		return "group \"g\" {\n  count = 1\n  volume \"d\" {\n    type = \"csi\"\n    source = \"v\"\n" +
			"    access_mode = \"multi-node-multi-writer\"\n    attachment_mode = \"file-system\"\n    read_only = " + readOnly + "\n" +
			"    mount_options {\n      mount_flags = [" + flags + "]\n    }\n  }\n}\n"
	}
	for _, tt := range []struct {
		name, src string
		group     bool
		want      string // in the warning's detail; "" for none
		line, col int    // where the flag stands
	}{
		{"writer", volume("single-node-writer", `"noatime", "ro"`), false, "its capability single-node-writer lets claims write it", 10, 29},
		{"multi-writer", volume("multi-node-multi-writer", `"ro"`), false, "multi-node-multi-writer", 10, 18},
		{"reader only", volume("single-node-reader-only", `"ro"`), false, "", 0, 0},
		{"rw", volume("single-node-writer", `"rw", "errors=remount-ro", "ro=1"`), false, "", 0, 0},
		{"group writes", group("false", `"ro"`), true, "this volume block is not read_only", 10, 22},
		{"group reads", group("true", `"ro"`), true, "", 0, 0},
	} {
		t.Run(tt.name, func(t *testing.T) {
			var diags hcl.Diagnostics
			if tt.group {
				_, diags = NewParser().ParseGroup("g.hcl", []byte(tt.src))
			} else {
				_, diags = ParseVolume("v.hcl", []byte(tt.src), VerbAny)
			}
			if diags.HasErrors() {
				t.Fatalf("%v", diags)
			}
			found := diagsNamed(diags, "Read-only mount flag")
			switch {
			case tt.want == "" && len(found) != 0:
				t.Errorf("warned: %v", found[0])
			case tt.want == "":
			case len(found) != 1:
				t.Errorf("diagnostics %v; want one read-only mount flag warning", diags)
			case found[0].Severity != hcl.DiagWarning || !strings.Contains(found[0].Detail, tt.want) || found[0].Subject == nil ||
				found[0].Subject.Start.Line != tt.line || found[0].Subject.Start.Column != tt.col:
				t.Errorf("warning %+v (at %v); want a warning at %d:%d saying %q", found[0], found[0].Subject, tt.line, tt.col, tt.want)
			case strings.Contains(found[0].Detail, `"ro"`):
				t.Errorf("warning spells the flag: %s", found[0].Detail)
			}
		})
	}
}

// diagsNamed is the diagnostics of diags with summary.
func diagsNamed(diags hcl.Diagnostics, summary string) []*hcl.Diagnostic {
	var found []*hcl.Diagnostic
	for _, d := range diags {
		if d.Summary == summary {
			found = append(found, d)
		}
	}
	return found
}
