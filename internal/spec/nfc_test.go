package spec

import (
	"fmt"
	"strings"
	"testing"
)

// TestMapKeysEqualInNFC records what a spec does with two map keys that differ only in Unicode
// normalisation ("é" as U+00E9 and as e U+0301): HCL normalises a quoted key, or a bare key of
// an object, to NFC, as it does every string, and JSON's keys likewise, so the two become one
// and the spec is refused with "Duplicate map key"; in a block-form map (`parameters { é = ...
// }`) a bare key is an argument name, which HCL keeps as written, so both keys are kept
// apart, as CSI and the plugin see them (parameters and context: secret keys and topology
// segment keys allow ASCII only). `export nomad` refuses such a volume (internal/nomad,
// sameInNFC): its file would write the two keys as one.
func TestMapKeysEqualInNFC(t *testing.T) {
	const pre, dec = "\u00e9", "e\u0301"
	head := "id = \"v\"\nname = \"v\"\ntype = \"csi\"\nplugin_id = \"p\"\nexternal_id = \"x\"\n" +
		"capability {\n  access_mode = \"single-node-writer\"\n  attachment_mode = \"file-system\"\n}\n"
	jsonHead := `{"id":"v","name":"v","type":"csi","plugin_id":"p","external_id":"x",` +
		`"capability":[{"access_mode":"single-node-writer","attachment_mode":"file-system"}],`
	for _, c := range []struct {
		name, src string
		kept      bool
	}{
		{"quoted keys.hcl", head + fmt.Sprintf("parameters = {\n  %q = \"a\"\n  %q = \"b\"\n}\n", pre, dec), false},
		{"bare object keys.hcl", head + fmt.Sprintf("parameters = {\n  %s = \"a\"\n  %s = \"b\"\n}\n", pre, dec), false},
		{"quoted block keys.hcl", head + fmt.Sprintf("parameters {\n  %q = \"a\"\n  %q = \"b\"\n}\n", pre, dec), false},
		{"keys.json", jsonHead + fmt.Sprintf(`"context":{"%s":"a","%s":"b"}}`, pre, dec), false},
		{"bare block keys.hcl", head + fmt.Sprintf("parameters {\n  %s = \"a\"\n  %s = \"b\"\n}\n", pre, dec), true},
	} {
		v, diags := ParseVolume(c.name, []byte(c.src), VerbRegister)
		switch {
		case c.kept && (diags.HasErrors() || v.Parameters[pre] != "a" || v.Parameters[dec] != "b"):
			t.Errorf("%s: want both keys kept, got %v %v", c.name, diags, v)
		case !c.kept && !strings.Contains(diags.Error(), "Duplicate map key"):
			t.Errorf("%s: want the keys refused as duplicates, got %v", c.name, diags)
		}
	}
}
