package spec

import (
	"maps"
	"testing"

	hcl1 "github.com/hashicorp/hcl"
)

// TestMapAttributeWithoutSeparatorsIsRead: HCL1 reads an object's items side by side without
// commas in the attribute form of a map as in its block form (its objectType is the same
// objectList), so `nomad volume register` takes `context = { server = "a" share = "b" }` on one
// line. docs/specs.md: maps "may be written either way, as in Nomad", with "commas between items
// or none". volctl read the block form so (TestOneLineItemsWithoutCommasAreRead) and refused the
// attribute form ("Missing attribute separator"). A key given twice there is still refused.
// Found by helper review71.
func TestMapAttributeWithoutSeparatorsIsRead(t *testing.T) {
	head := "id = \"db\"\ntype = \"csi\"\nplugin_id = \"ebs\"\n" +
		"capability {\n  access_mode = \"single-node-writer\"\n  attachment_mode = \"file-system\"\n}\n"
	for _, c := range []struct {
		name, src string
		want      map[string]string
	}{
		{"parameters", head + "parameters = { type = \"gp3\" iops = \"3000\" }\n", map[string]string{"type": "gp3", "iops": "3000"}},
		{"context", head + "context = { server = \"10.0.0.1\" share = \"/export\" }\n", map[string]string{"server": "10.0.0.1", "share": "/export"}},
		{"segments", head + "topology_request {\n  required {\n    topology {\n      segments = { rack = \"R1\" zone = \"Z1\" }\n    }\n  }\n}\n", map[string]string{"rack": "R1", "zone": "Z1"}},
	} {
		var m map[string]any
		if err := hcl1.Decode(&m, c.src); err != nil {
			t.Fatalf("%s: HCL1 refuses it: %v; the test's premise is wrong", c.name, err)
		}
		v, diags := ParseVolume("v.hcl", []byte(c.src), VerbAny)
		if v == nil || diags.HasErrors() {
			t.Errorf("%s: refused, though Nomad's HCL1 reads it: %v\n%s", c.name, diags, c.src)
			continue
		}
		got := v.Parameters
		switch c.name {
		case "context":
			got = v.Context
		case "segments":
			got = nil
			if tr := v.TopologyRequest; tr != nil && len(tr.Required) == 1 {
				got = tr.Required[0].Segments
			}
		}
		if !maps.Equal(got, c.want) {
			t.Errorf("%s = %v, want %v", c.name, got, c.want)
		}
	}
	twice := head + "parameters = { type = \"gp3\" type = \"io2\" }\n"
	if _, diags := ParseVolume("v.hcl", []byte(twice), VerbAny); !diags.HasErrors() {
		t.Errorf("a map attribute giving one key twice, side by side, was taken:\n%s", twice)
	}
}
