package nomad

import (
	"maps"
	"slices"
	"testing"

	hcl1 "github.com/hashicorp/hcl"
	"github.com/zclconf/go-cty/cty"

	"github.com/volctl/volctl/internal/spec"
)

// TestVolumeFileReadsBackThroughHCL1: `nomad volume register` parses volume files with HCL1
// (github.com/hashicorp/hcl, the version Nomad builds with), which knows no "$${" or "%%{"
// doubling: a value "${x}" written as hclwrite writes it reached Nomad as "$${x}", and an
// unclosed "${" swallowed the rest of its line, quotes and all. Every string of an exported
// volume file must read back to the same value through HCL1 and through volctl's own parser.
func TestVolumeFileReadsBackThroughHCL1(t *testing.T) {
	values := append(slices.Clone(oddStrings), "${", "%{", "a${b}c${", "}${", `"${a}"`, "x = ${y}", "$", "%", "${{}}")
	for i, s := range values {
		values[i] = cty.NormalizeString(s) // a string not in NFC is refused: TestExportRefusesStringsNotInNFC
	}
	v := spec.Volume{ID: "v", PluginID: "p", ExternalID: "e",
		Capabilities: []spec.Capability{{AccessMode: spec.SingleNodeWriter, AttachmentMode: spec.FileSystem}},
		Parameters:   map[string]string{}, Secrets: spec.Secrets{}, Context: map[string]string{},
		MountOptions: &spec.MountOptions{FSType: "ext4"},
	}
	for i, s := range values {
		k := string(rune('a'+i%26)) + string(rune('a'+i/26))
		v.Parameters[k] = s
		v.Secrets[k] = s
		v.Context["key "+s] = s // keys that are not identifiers are quoted, escaped the same way
		v.MountOptions.MountFlags = append(v.MountOptions.MountFlags, s)
	}
	b, _, err := VolumeFile(v, true)
	if err != nil {
		t.Fatal(err)
	}

	var file map[string]any // HCL1 decodes each block and map into a list of maps
	if err := hcl1.Decode(&file, string(b)); err != nil {
		t.Fatalf("HCL1 does not parse the exported volume file: %v\n%s", err, b)
	}
	block := func(name string) map[string]any {
		t.Helper()
		l, _ := file[name].([]map[string]any)
		if len(l) != 1 {
			t.Fatalf("HCL1 reads %s as %#v, want one map\n%s", name, file[name], b)
		}
		return l[0]
	}
	want := func(field string, want map[string]string) {
		t.Helper()
		got := block(field)
		if len(got) != len(want) {
			t.Errorf("HCL1 reads %d entries of %s, want %d\n%s", len(got), field, len(want), b)
		}
		for k, w := range want {
			if g, ok := got[cleanForExport(k)]; !ok || g != cleanForExport(w) {
				t.Errorf("HCL1 reads %s[%q] as %q (present %v), want %q\n%s", field, k, g, ok, cleanForExport(w), b)
			}
		}
	}
	want("parameters", v.Parameters)
	want("secrets", v.Secrets)
	want("context", v.Context)
	flags, _ := block("mount_options")["mount_flags"].([]any)
	if len(flags) != len(values) {
		t.Fatalf("HCL1 reads %d mount flags, want %d: %q\n%s", len(flags), len(values), flags, b)
	}
	for i, f := range flags {
		if f != cleanForExport(values[i]) {
			t.Errorf("HCL1 reads mount flag %d as %q, want %q", i, f, cleanForExport(values[i]))
		}
	}

	// And volctl's own parser (HCL2) reads the same file to the same values.
	back, diags := spec.ParseVolume("volume-v.hcl", b, spec.VerbRegister)
	if diags.HasErrors() {
		t.Fatalf("volctl does not parse the exported volume file: %s\n%s", diags.Error(), b)
	}
	if !maps.Equal(back.Parameters, clean(v.Parameters)) || !maps.Equal(map[string]string(back.Secrets), clean(v.Secrets)) {
		t.Errorf("volctl reads parameters %q, secrets %q", back.Parameters, back.Secrets)
	}
}

// cleanForExport is what a string becomes in an exported file: each invalid UTF-8 byte
// replaced by U+FFFD, then NFC.
func cleanForExport(s string) string { return hclStr(string([]rune(s))).str }

func clean(m map[string]string) map[string]string {
	out := map[string]string{}
	for k, v := range m {
		out[cleanForExport(k)] = cleanForExport(v)
	}
	return out
}
