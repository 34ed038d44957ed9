package spec

import (
	"fmt"
	"strings"
	"testing"
)

// TestMapKeysEqualInNFC records what a spec does with two map keys that differ only in Unicode
// normalisation ("é" as U+00E9 and as e U+0301): HCL normalises a quoted key, or a bare key of
// an object, to NFC, as it does every string, and JSON's keys likewise, so the two become one
// and the spec is refused with "Duplicate map key". In a block-form map (`parameters { é = ...
// }`) a bare key is an argument name, which HCL keeps as written: a decomposed one holds a
// combining mark, which Nomad's HCL1 does not read in a name ("illegal char"), so the spec is
// refused at it ("Name Nomad does not read", hcl1Names); but a key whose NFC is another letter
// with no mark (U+212A KELVIN SIGN, whose NFC is K; U+212B ANGSTROM SIGN, whose NFC is Å) is a
// name both read, and the two keys are kept apart, as CSI and the plugin see them. Such keys
// reach a volume so, and from a plugin (its context): `export nomad` refuses such a volume
// (internal/nomad, sameInNFC): its file would write the two keys as one.
func TestMapKeysEqualInNFC(t *testing.T) {
	const pre, dec = "\u00e9", "e\u0301"
	head := "id = \"v\"\nname = \"v\"\ntype = \"csi\"\nplugin_id = \"p\"\nexternal_id = \"x\"\n" +
		"capability {\n  access_mode = \"single-node-writer\"\n  attachment_mode = \"file-system\"\n}\n"
	jsonHead := `{"id":"v","name":"v","type":"csi","plugin_id":"p","external_id":"x",` +
		`"capability":[{"access_mode":"single-node-writer","attachment_mode":"file-system"}],`
	const (
		duplicate = iota // refused as duplicates
		hcl1Name         // refused as a name HCL1 does not read (the decomposed key)
		kept             // read, both keys kept apart
	)
	for _, c := range []struct {
		name, src string
		want      int
		a, b      string // the keys, for kept
	}{
		{"quoted keys.hcl", head + fmt.Sprintf("parameters = {\n  %q = \"a\"\n  %q = \"b\"\n}\n", pre, dec), duplicate, "", ""},
		{"bare object keys.hcl", head + fmt.Sprintf("parameters = {\n  %s = \"a\"\n  %s = \"b\"\n}\n", pre, dec), duplicate, "", ""},
		{"quoted block keys.hcl", head + fmt.Sprintf("parameters {\n  %q = \"a\"\n  %q = \"b\"\n}\n", pre, dec), duplicate, "", ""},
		{"keys.json", jsonHead + fmt.Sprintf(`"context":{"%s":"a","%s":"b"}}`, pre, dec), duplicate, "", ""},
		{"bare block keys.hcl", head + fmt.Sprintf("parameters {\n  %s = \"a\"\n  %s = \"b\"\n}\n", pre, dec), hcl1Name, "", ""},
		{"kelvin sign.hcl", head + "parameters {\n  \u212a = \"a\"\n  K = \"b\"\n}\n", kept, "\u212a", "K"},
		{"angstrom sign.hcl", head + "context {\n  \u212b = \"a\"\n  \u00c5 = \"b\"\n}\n", kept, "\u212b", "\u00c5"},
		{"kelvin sign quoted.hcl", head + "parameters {\n  \"\u212a\" = \"a\"\n  K = \"b\"\n}\n", duplicate, "", ""},
	} {
		v, diags := ParseVolume(c.name, []byte(c.src), VerbRegister)
		switch {
		case c.want == kept:
			if diags.HasErrors() {
				t.Errorf("%s: refused: %v", c.name, diags)
				continue
			}
			m := v.Parameters
			if len(v.Context) > 0 {
				m = v.Context
			}
			if len(m) != 2 || m[c.a] != "a" || m[c.b] != "b" {
				t.Errorf("%s: parameters %+q context %+q, want %+q and %+q kept apart", c.name, v.Parameters, v.Context, c.a, c.b)
			}
		case v != nil:
			t.Errorf("%s: read, parameters %q context %q", c.name, v.Parameters, v.Context)
		case c.want == hcl1Name && (!strings.Contains(diags.Error(), "Name Nomad does not read") || !strings.Contains(diags.Error(), "U+0301")):
			t.Errorf("%s: want the decomposed key refused as Nomad refuses it, got %v", c.name, diags)
		case c.want == duplicate && !hasError(diags, "Duplicate map key", ""):
			t.Errorf("%s: want the keys refused as duplicates, got %v", c.name, diags)
		}
	}
}

// HCL reads a block label as written and a quoted string in an expression in NFC: a group's
// volume block labelled in decomposed form is still found by the volume_mount that names it
// (volume_mount.volume becomes the label as written), and two blocks whose labels differ only
// in normalisation are one name, refused as a duplicate rather than both mounts silently
// meaning the precomposed one.
func TestGroupVolumeNamesCompareInNFC(t *testing.T) {
	const pre, dec = "\u00e9", "e\u0301"
	block := func(label, source string) string {
		return fmt.Sprintf("  volume %q {\n    type = \"csi\"\n    source = %q\n    access_mode = \"single-node-writer\"\n    attachment_mode = \"file-system\"\n  }\n", label, source)
	}
	mount := func(volume, dest string) string {
		return fmt.Sprintf("  volume_mount {\n    volume = %q\n    destination = %q\n  }\n", volume, dest)
	}
	// %q keeps the combining accent as written (it is printable), so the file holds both forms.
	g, diags := NewParser().ParseGroup("decomposed.hcl", []byte("group \"web\" {\n"+block(dec, "a")+mount(dec, "/a")+"}\n"))
	if diags.HasErrors() {
		t.Fatalf("a volume block labelled %+q, mounted by that name: %v", dec, diags)
	}
	if len(g.Mounts) != 1 || g.Mounts[0].Volume != g.Volumes[0].Name || g.Volumes[0].Name != dec {
		t.Errorf("volumes %+v, mounts %+v: want the mount to name the block as its label is written (%+q)", g.Volumes, g.Mounts, dec)
	}

	_, diags = NewParser().ParseGroup("both.hcl", []byte("group \"web\" {\n"+block(pre, "a")+block(dec, "b")+mount(pre, "/a")+mount(dec, "/b")+"}\n"))
	if !diags.HasErrors() || !strings.Contains(diags.Error(), "Duplicate volume block") || !strings.Contains(diags.Error(), "only in Unicode normalisation") {
		t.Errorf("two volume blocks labelled %+q and %+q: %v, want them refused as one name", pre, dec, diags)
	}
}

// A plugin's ID is its block's label, which HCL keeps as written, while a volume names its
// plugin in plugin_id, a quoted string HCL reads in NFC: a plugin labelled in decomposed form
// is read in NFC too, so the volume whose file spells plugin_id the same way names it, and two
// plugin blocks whose labels differ only in normalisation are one plugin, refused as declared
// twice.
func TestPluginIDsAreReadInNFC(t *testing.T) {
	const pre, dec = "\u00e9", "e\u0301"
	plugin := func(label string) string {
		return fmt.Sprintf("plugin %q {\n  type = \"monolith\"\n  socket = \"/run/p.sock\"\n}\n", label)
	}
	f, diags := NewParser().Parse("plugin.hcl", []byte(plugin(dec)), VerbRegister)
	if diags.HasErrors() {
		t.Fatal(diags)
	}
	v, diags := ParseVolume("volume.hcl", []byte("id = \"v\"\nname = \"v\"\ntype = \"csi\"\nplugin_id = \""+dec+"\"\nexternal_id = \"x\"\n"+
		"capability {\n  access_mode = \"single-node-writer\"\n  attachment_mode = \"file-system\"\n}\n"), VerbRegister)
	if diags.HasErrors() {
		t.Fatal(diags)
	}
	if len(f.Plugins) != 1 || f.Plugins[0].ID != v.PluginID {
		t.Errorf("plugin IDs %+v, volume's plugin_id %+q: want the plugin the volume's file names, spelt alike in both files", f.Plugins, v.PluginID)
	}
	_, diags = NewParser().Parse("both.hcl", []byte(plugin(pre)+plugin(dec)), VerbRegister)
	if !strings.Contains(diags.Error(), "Duplicate plugin") {
		t.Errorf("plugin blocks labelled %+q and %+q: %v, want them refused as one plugin declared twice", pre, dec, diags)
	}
}

// A group's name is its block's label, which HCL keeps as written: it is read in NFC, as a
// plugin's label is and as the command line reads a typed group name, so `group status` finds
// the group whichever way the file or the terminal spelt it.
func TestGroupNameIsReadInNFC(t *testing.T) {
	const pre, dec = "caf\u00e9", "cafe\u0301"
	g, diags := NewParser().ParseGroup("g.hcl", []byte("group \""+dec+"\" {\n  volume \"d\" {\n    type = \"csi\"\n    source = \"v\"\n"+
		"    access_mode = \"single-node-writer\"\n    attachment_mode = \"file-system\"\n  }\n}\n"))
	if diags.HasErrors() {
		t.Fatal(diags)
	}
	if g.Name != pre {
		t.Errorf("group labelled %+q is named %+q, want %+q (NFC)", dec, g.Name, pre)
	}
}
