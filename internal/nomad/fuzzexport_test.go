package nomad

import (
	"maps"
	"slices"
	"testing"

	hcl1 "github.com/hashicorp/hcl"

	"github.com/volctl/volctl/internal/spec"
)

// FuzzVolumeFileReadsBack is TestVolumeFileReadsBackThroughHCL1 over arbitrary text: a volume
// whose parameter, context and mount flag hold a value (and whose parameter and context
// keys are a key) a plugin or a user could have written is exported (VolumeFile), and the file
// must read back to the same values, cleaned (cleanForExport), through HCL1, as `nomad volume
// register` reads it, and through volctl's own parser; or the export refuses it with an error.
func FuzzVolumeFileReadsBack(f *testing.F) {
	for _, s := range oddStrings {
		f.Add("k", s)
		f.Add(s, "v")
	}
	for _, s := range []string{"${", "%{", "a${b}c${", "}${", `"${a}"`, "$", "%", "${{}}", "\\u007b", "$\\u007b", "a\\", "\"", "<<EOF\nx\nEOF", "\u00e9", "e\u0301", "#", "//", "/*", "true", "false"} {
		f.Add(s, s)
	}
	f.Fuzz(func(t *testing.T, key, value string) {
		if len(key) > 128 || len(value) > 1024 {
			return
		}
		v := spec.Volume{ID: "v", PluginID: "p", ExternalID: "e",
			Capabilities: []spec.Capability{{AccessMode: spec.SingleNodeWriter, AttachmentMode: spec.FileSystem}},
			Parameters:   map[string]string{key: value, "other": value},
			Context:      map[string]string{key: value},
			MountOptions: &spec.MountOptions{FSType: "ext4", MountFlags: []string{value, "ro"}},
		}
		b, _, err := VolumeFile(v, true)
		if err != nil {
			return // refused, by name: TestExportRefusesStringsNotInNFC and others
		}
		var file map[string]any
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
		for field, want := range map[string]map[string]string{"parameters": v.Parameters, "context": v.Context} {
			got := block(field)
			if len(got) != len(clean(want)) {
				t.Fatalf("HCL1 reads %d entries of %s, want %d\n%s", len(got), field, len(clean(want)), b)
			}
			for k, w := range clean(want) {
				if g, ok := got[k]; !ok || g != w {
					t.Fatalf("HCL1 reads %s[%q] as %#v (present %v), want %q\n%s", field, k, g, ok, w, b)
				}
			}
		}
		flags, _ := block("mount_options")["mount_flags"].([]any)
		if !slices.Equal(flags, []any{cleanForExport(value), "ro"}) {
			t.Fatalf("HCL1 reads mount flags %#v, want %q\n%s", flags, []string{cleanForExport(value), "ro"}, b)
		}

		back, diags := spec.ParseVolume("volume-v.hcl", b, spec.VerbRegister)
		if diags.HasErrors() {
			t.Fatalf("volctl does not parse the exported volume file: %s\n%s", diags.Error(), b)
		}
		if !maps.Equal(back.Parameters, clean(v.Parameters)) || !maps.Equal(back.Context, clean(v.Context)) ||
			back.MountOptions == nil || !slices.Equal(back.MountOptions.MountFlags, []string{cleanForExport(value), "ro"}) {
			t.Fatalf("volctl reads parameters %q, context %q, mount options %+v\n%s", back.Parameters, back.Context, back.MountOptions, b)
		}
	})
}
