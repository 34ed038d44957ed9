package spec

import (
	"fmt"
	"strings"
	"testing"

	"github.com/hashicorp/hcl/v2"
)

// TestGroupCountIsBoundedBeforeEvaluation: a group's count is evaluated first with
// a.Expr.Value(nil) (group.go, decoder.group, the check for count = 0) before it goes through
// value, which bounds what an expression would build (evalcost.go, MaxExprValues). So a
// count written as nested for expressions is built in full before "Value too large to
// evaluate" refuses it: three nested over a list of 120 (a 1 KB group spec) build some
// 1,700,000 values (over 200, 8 million: 5 s and 750 MB; a fourth level takes the host's
// memory), where the same expression anywhere else in the spec is refused before anything is
// built. Correct: count is refused as every other value is, from its syntax, without being
// evaluated (the count = 0 check reading the value through value, or after it).
// Found by helper review74.
func TestGroupCountIsBoundedBeforeEvaluation(t *testing.T) {
	l := listOf(120, "1")
	src := fmt.Sprintf("group \"web\" {\n  count = [for a in %s : [for b in %s : [for c in %s : 0]]]\n"+
		"  volume \"data\" {\n    type = \"csi\"\n    source = \"db\"\n    access_mode = \"single-node-writer\"\n    attachment_mode = \"file-system\"\n  }\n}\n", l, l, l)
	var diags hcl.Diagnostics
	used := allocated(func() { _, diags = NewParser().ParseGroup("g.hcl", []byte(src)) })
	if !hasError(diags, "Value too large to evaluate", fmt.Sprintf("at most %d", MaxExprValues)) {
		t.Fatalf("no \"Value too large to evaluate\" error for count; got:\n%s", diags.Error())
	}
	if used > 8<<20 {
		t.Errorf("refusing the group spec allocated %d MiB: its count was evaluated in full before it was refused (group.go: a.Expr.Value(nil))", used>>20)
	}
}

// TestJSONBlockInAListIsNamedWhereItIs: in JSON, a block given more than once is written as a
// list of objects ("capability": [{...}, {...}]), and hcl/json gives every block of the list
// the list's "[" as its DefRange. volctl places the errors about one block at its DefRange
// (volume.go: d.capability(bc, b.DefRange); group.go: d.missing(b.DefRange, ...)), so a JSON
// spec's second capability that lacks attachment_mode, or second volume_mount that lacks its
// destination, is reported on the line of the list's "[", where the first block stands, and
// in a list of many the user cannot tell which one is meant (the HCL form of the same spec
// points at the block that lacks it). Correct: the error is placed on the object that lacks
// the argument (its braces: hcl/json's MissingItemRange of the block's body, as the top of a
// volume spec already uses), lines 10-12 and 7 here. Found by helper review74.
func TestJSONBlockInAListIsNamedWhereItIs(t *testing.T) {
	volume := `{
  "id": "db",
  "type": "csi",
  "plugin_id": "ebs",
  "capability": [
    {
      "access_mode": "single-node-writer",
      "attachment_mode": "file-system"
    },
    {
      "access_mode": "single-node-reader-only"
    }
  ]
}
`
	group := `{
  "group": {
    "web": {
      "volume": {"data": {"type": "csi", "source": "db", "access_mode": "single-node-writer", "attachment_mode": "file-system"}},
      "volume_mount": [
        {"volume": "data", "destination": "/srv/a"},
        {"volume": "data"}
      ]
    }
  }
}
`
	for _, tc := range []struct {
		name, src, detail string
		from, to          int // the lines of the object that lacks the argument
	}{
		{"capability.json", volume, `"attachment_mode" is required`, 10, 12},
		{"group.json", group, `"destination" is required`, 7, 7},
	} {
		_, diags := NewParser().Parse(tc.name, []byte(tc.src), VerbAny)
		found := false
		for _, d := range diags {
			if d.Summary != "Missing required argument" || !strings.Contains(d.Detail, tc.detail) {
				continue
			}
			found = true
			if d.Subject == nil || d.Subject.Start.Line < tc.from || d.Subject.Start.Line > tc.to {
				t.Errorf("%s: %q is reported at %v, not on the object that lacks it (lines %d-%d)", tc.name, d.Detail, d.Subject, tc.from, tc.to)
			}
		}
		if !found {
			t.Fatalf("%s: no \"Missing required argument\" error (%s); got:\n%s", tc.name, tc.detail, diags.Error())
		}
	}
}

// A volume_mount that is read_only of a block device claimed for writing is refused: a
// read-only mount of a device file stops no write to the device, so the mount would not be
// read-only (TestReadOnlyVolumeMountOfABlockVolumeIsNotWritable, the engine's own refusal).
// Found by helper review74.
func TestReadOnlyVolumeMountOfABlockDeviceClaimedToWriteIsRefused(t *testing.T) {
	src := `group "web" {
  volume "disk" {
    type            = "csi"
    source          = "db"
    access_mode     = "single-node-writer"
    attachment_mode = "block-device"
  }
  volume_mount {
    volume      = "disk"
    destination = "/srv/disk"
    read_only   = true
  }
}
`
	_, diags := NewParser().ParseGroup("g.hcl", []byte(src))
	if !diags.HasErrors() || !strings.Contains(diags.Error(), "Read-only mount of a block device") {
		t.Fatalf("a read_only volume_mount of a block device claimed to write: %v; want it refused", diags)
	}
	ro := strings.Replace(src, `attachment_mode = "block-device"`, "attachment_mode = \"block-device\"\n    read_only       = true", 1)
	ro = strings.Replace(ro, `access_mode     = "single-node-writer"`, `access_mode     = "single-node-reader-only"`, 1)
	if _, diags := NewParser().ParseGroup("g.hcl", []byte(ro)); diags.HasErrors() {
		t.Errorf("the advised read claim of the block device: %v", diags)
	}
}
