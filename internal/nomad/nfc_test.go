package nomad

import (
	"strings"
	"testing"

	"github.com/volctl/volctl/internal/spec"
)

// precomposed and decomposed are "é" as U+00E9 and as e followed by U+0301: different keys to
// volctl, CSI and a plugin, one key in Unicode normal form C, which the writer writes keys in.
const precomposed, decomposed = "\u00e9", "e\u0301"

// TestExportRefusesKeysEqualInNFC: every map an exported file holds refuses two keys that
// differ only in Unicode normalisation, naming the volume, the map and both keys escaped (a
// group's volume blocks: the blocks and both names; the caller names the group), instead of
// writing one of them.
func TestExportRefusesKeysEqualInNFC(t *testing.T) {
	both := func() map[string]string { return map[string]string{precomposed: "a", decomposed: "b"} }
	base := func() spec.Volume {
		return spec.Volume{ID: "vé", PluginID: "p", ExternalID: "x",
			Capabilities: []spec.Capability{{AccessMode: spec.SingleNodeWriter, AttachmentMode: spec.FileSystem}}}
	}
	wantKeys := `"e\u0301" and "\u00e9"` // in byte order
	for _, c := range []struct {
		what string
		set  func(*spec.Volume)
	}{
		{"parameters", func(v *spec.Volume) { v.Parameters = both() }},
		{"secrets", func(v *spec.Volume) { v.Secrets = both() }},
		{"context", func(v *spec.Volume) { v.Context = both() }},
		{"topology_request.required[1].segments", func(v *spec.Volume) {
			v.TopologyRequest = &spec.TopologyRequest{Required: []spec.Topology{{Segments: map[string]string{"z": "1"}}, {Segments: both()}}}
		}},
		{"topology_request.preferred[0].segments", func(v *spec.Volume) {
			v.TopologyRequest = &spec.TopologyRequest{Preferred: []spec.Topology{{Segments: both()}}}
		}},
	} {
		for _, secrets := range []bool{false, true} {
			v := base()
			c.set(&v)
			b, _, err := VolumeFile(v, secrets)
			if err == nil {
				t.Errorf("%s (include secrets %v): no error; wrote\n%s", c.what, secrets, b)
				continue
			}
			for _, want := range []string{`volume "vé"`, c.what, wantKeys, "one value would be lost"} {
				if !strings.Contains(err.Error(), want) {
					t.Errorf("%s: error %q does not hold %q", c.what, err, want)
				}
			}
			if b != nil {
				t.Errorf("%s: wrote a file as well as the error", c.what)
			}
		}
	}
	// Keys that are the same only to case, or differ in normal form C too, are kept apart. (They
	// are given in NFC: a key that is not is refused on its own, TestExportRefusesStringsNotInNFC.)
	v := base()
	v.Parameters = map[string]string{precomposed: "a", "\u00c9": "b", "e": "c"}
	if _, _, err := VolumeFile(v, true); err != nil {
		t.Errorf("keys that stay apart in NFC refused: %v", err)
	}

	g := spec.Group{Name: "web", Count: 1,
		Volumes: []spec.VolumeRequest{{Name: precomposed, Source: "a"}, {Name: decomposed, Source: "b"}},
		Mounts:  []spec.VolumeMount{{Volume: precomposed, Destination: "/a"}, {Volume: decomposed, Destination: "/b"}}}
	b, _, err := GroupJob(g, JobOptions{})
	if err == nil {
		t.Fatalf("group: no error; wrote\n%s", b)
	}
	for _, want := range []string{"volume blocks", wantKeys, "one block would be lost"} {
		if !strings.Contains(err.Error(), want) {
			t.Errorf("group: error %q does not hold %q", err, want)
		}
	}
}

// TestExportRefusesStringsNotInNFC: a volume file holds every string in Unicode normal form
// C, so a string volctl holds in another form (here "é" decomposed) would reach Nomad as
// another string: an external ID naming another volume, a changed secret. Export refuses it,
// naming the volume and where the string is, never the value; a secret or mount flag written
// as a placeholder is no such string.
func TestExportRefusesStringsNotInNFC(t *testing.T) {
	const value = "s" + decomposed + "cret-zq"
	base := func() spec.Volume {
		return spec.Volume{ID: "v", PluginID: "p", ExternalID: "x",
			Capabilities: []spec.Capability{{AccessMode: spec.SingleNodeWriter, AttachmentMode: spec.FileSystem}}}
	}
	for _, c := range []struct {
		where       string
		set         func(*spec.Volume)
		secretsOnly bool // refused only when secrets are written
	}{
		{"external_id", func(v *spec.Volume) { v.ExternalID = value }, false},
		{`parameters["k"]`, func(v *spec.Volume) { v.Parameters = map[string]string{"k": value} }, false},
		{`context["k"]`, func(v *spec.Volume) { v.Context = map[string]string{"k": value} }, false},
		{`context["` + `e\u0301` + `"] (the key)`, func(v *spec.Volume) { v.Context = map[string]string{decomposed: "1"} }, false},
		{`topology_request.required.topology.segments["zone"]`, func(v *spec.Volume) {
			v.TopologyRequest = &spec.TopologyRequest{Required: []spec.Topology{{Segments: map[string]string{"zone": value}}}}
		}, false},
		{`secrets["k"]`, func(v *spec.Volume) { v.Secrets = spec.Secrets{"k": value} }, true},
		{"mount_options.mount_flags[1]", func(v *spec.Volume) {
			v.MountOptions = &spec.MountOptions{MountFlags: spec.MountFlags{"ro", value}}
		}, true},
	} {
		for _, secrets := range []bool{false, true} {
			v := base()
			c.set(&v)
			b, _, err := VolumeFile(v, secrets)
			if c.secretsOnly && !secrets {
				if err != nil {
					t.Errorf("%s written as a placeholder: %v", c.where, err)
				}
				continue
			}
			if err == nil {
				t.Errorf("%s not in NFC (include secrets %v): no error; wrote\n%s", c.where, secrets, b)
				continue
			}
			for _, want := range []string{`volume "v"`, c.where + " is not in Unicode normal form C", "volctl nomad register"} {
				if !strings.Contains(err.Error(), want) {
					t.Errorf("%s: error %q does not hold %q", c.where, err, want)
				}
			}
			if strings.Contains(err.Error(), "cret-zq") {
				t.Errorf("%s: error %q holds the value", c.where, err)
			}
			if b != nil {
				t.Errorf("%s: wrote a file as well as the error", c.where)
			}
		}
	}
}

// TestExportRefusesKeysEqualInNFCFromASpec: a spec still gives a volume two keys equal in NFC
// when neither holds a combining mark (U+212A KELVIN SIGN beside K, U+212B ANGSTROM SIGN
// beside Å, bare keys of a block-form map: spec.TestMapKeysEqualInNFC); export refuses it as it
// refuses a plugin's, naming both keys.
func TestExportRefusesKeysEqualInNFCFromASpec(t *testing.T) {
	src := "id = \"v\"\ntype = \"csi\"\nplugin_id = \"p\"\nexternal_id = \"x\"\n" +
		"capability {\n  access_mode = \"single-node-writer\"\n  attachment_mode = \"file-system\"\n}\n" +
		"parameters {\n  \u212a = \"a\"\n  K = \"b\"\n}\ncontext {\n  \u212b = \"a\"\n  \u00c5 = \"b\"\n}\n"
	v, diags := spec.ParseVolume("v.hcl", []byte(src), spec.VerbRegister)
	if diags.HasErrors() || len(v.Parameters) != 2 || len(v.Context) != 2 {
		t.Fatalf("the spec does not keep the keys apart (spec.TestMapKeysEqualInNFC): %v %v", diags, v)
	}
	b, _, err := VolumeFile(*v, true)
	if err == nil {
		t.Fatalf("no error; wrote\n%s", b)
	}
	for _, want := range []string{"parameters", `"K" and "\u212a"`, "one value would be lost"} {
		if !strings.Contains(err.Error(), want) {
			t.Errorf("error %q does not hold %q", err, want)
		}
	}
}
