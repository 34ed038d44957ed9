package nomad

import (
	"bytes"
	"flag"
	"os"
	"path/filepath"
	"testing"

	"github.com/zclconf/go-cty/cty"

	"github.com/volctl/volctl/internal/spec"
)

var update = flag.Bool("update", false, "rewrite testdata/*.golden from the current output")

// oddStrings are values that exercise the writer's escaping and alignment: template sequences
// (which must come out as $${ and %%{), quotes, backslashes, control characters, characters
// that are not printable, multi-byte and combining characters, wide ones, invalid UTF-8.
var oddStrings = []string{
	"${NOMAD_ALLOC_INDEX}", "%{ if x }y%{ endif }", "$${already}", "$$", "100%", "a$", "%",
	`quote " and back\slash \n`, "line\nbreak\ttab\rcr", "nul\x00bell\x07del\x7f",
	"zero\u200bwidth\u2028sep", "é vs e\u0301", "日本語の値", "emoji 👩‍👩‍👧 flag 🇫🇷",
	"\xff\xfe not utf-8", "private \ue000 and \U0010fffd", "",
}

// goldenCases are the exporters' inputs the golden files were written from; the golden files
// are the output of the hclwrite-based exporters volctl had before its own writer, so a
// difference is a change in what volctl writes.
func goldenCases() map[string]func() []byte {
	// A volume file refuses a string not in NFC (TestExportRefusesStringsNotInNFC), so the volume
	// cases are given each odd string in NFC, which is what hclwrite wrote of it.
	odd := map[string]string{}
	for i, s := range oddStrings {
		s = cty.NormalizeString(s)
		odd[string(rune('a'+i))+"_"+s] = s
		odd[string(rune('a'+i))] = s
	}
	full := spec.Volume{
		ID: "db", Namespace: "prod", Name: "db ${x}", Type: "csi", PluginID: "hostpath",
		ExternalID: "vol-0123", CapacityMin: 1 << 30, CapacityMax: 2 << 30,
		Capabilities: []spec.Capability{
			{AccessMode: spec.SingleNodeWriter, AttachmentMode: spec.FileSystem},
			{AccessMode: spec.SingleNodeReaderOnly, AttachmentMode: "block-device"}},
		MountOptions: &spec.MountOptions{FSType: "ext4", MountFlags: spec.MountFlags{"noatime", "password=hunter2"}},
		TopologyRequest: &spec.TopologyRequest{
			Required:  []spec.Topology{{Segments: map[string]string{"node": "n1", "rack": "r%{1}"}}, {Segments: map[string]string{}}},
			Preferred: []spec.Topology{{Segments: odd}}},
		Secrets:    spec.Secrets{"token": "s3cr3t", "odd key": "v", "b": "${x}"},
		Parameters: odd,
		Context:    map[string]string{"share": "//srv/share", "x": "", "long_key_name": "1"},
	}
	group := spec.Group{Name: "web", Count: 3,
		Volumes: []spec.VolumeRequest{
			{Name: "data", Source: "db", PerAlloc: true, AccessMode: spec.SingleNodeWriter, AttachmentMode: spec.FileSystem,
				MountOptions: &spec.MountOptions{FSType: "xfs", MountFlags: spec.MountFlags{"ro", "x=${y}"}}},
			{Name: "cfg", Type: "host", Source: "cfg \"q\"", ReadOnly: true, AccessMode: spec.SingleNodeReaderOnly, AttachmentMode: spec.FileSystem,
				MountOptions: &spec.MountOptions{FSType: "ext4"}},
		},
		Mounts: []spec.VolumeMount{
			{Volume: "data", Destination: "/srv/{alloc}/{index}"},
			{Volume: "data", Destination: "/mnt/%{odd}", ReadOnly: true, PropagationMode: spec.PropagationHostToTask},
			{Volume: "cfg", Destination: "/etc/cfg"},
		},
	}
	cases := map[string]func() []byte{
		"volume-minimal": func() []byte {
			b, _, _ := VolumeFile(spec.Volume{ID: "v", PluginID: "p"}, false)
			return b
		},
		"volume-full": func() []byte {
			b, _, _ := VolumeFile(full, false)
			return b
		},
		"volume-full-secrets": func() []byte {
			b, _, _ := VolumeFile(full, true)
			return b
		},
		"job-group": func() []byte {
			b, _, _ := GroupJob(group, JobOptions{Namespace: "prod", Region: "eu", Datacenters: []string{"dc1", "dc 2"}})
			return b
		},
		"job-group-docker": func() []byte {
			b, _, _ := GroupJob(group, JobOptions{Driver: "docker", Image: "busybox:1", Args: []string{"sh", "-c", "sleep ${X}"}, IncludeSecrets: true})
			return b
		},
		"job-group-empty": func() []byte {
			b, _, _ := GroupJob(spec.Group{Name: "odd \"name\" ${x}"}, JobOptions{Command: "/bin/true"})
			return b
		},
		"job-plugin": func() []byte {
			b, _ := PluginJob(PluginJobOptions{PluginID: "hostpath", VolctlPath: "/usr/local/bin/volctl", Root: "/srv/vols",
				NodeID: "node-1", ExtraArgs: []string{"--enable-attach", "--max-volumes", "10"}, NomadDataDir: "/opt/nomad/data/", NomadNode: "host-1"})
			return b
		},
		"job-plugin-docker": func() []byte {
			b, _ := PluginJob(PluginJobOptions{PluginID: "p ${x}", VolctlPath: "/volctl", Root: "/r", NodeID: "日本",
				Driver: "docker", Datacenters: []string{"a"}, Namespace: "ns", Region: "r", NomadNode: "节点 \"${y}\""})
			return b
		},
	}
	for i, s := range oddStrings {
		n := cty.NormalizeString(s)
		v := spec.Volume{ID: n, Name: n, PluginID: n, ExternalID: n, Parameters: map[string]string{n: n, "k": n},
			Context: map[string]string{n: n}, Secrets: spec.Secrets{n: n}}
		g := spec.Group{Name: s, Volumes: []spec.VolumeRequest{{Name: s, Source: s}},
			Mounts: []spec.VolumeMount{{Volume: s, Destination: s}}}
		name := string(rune('a' + i))
		cases["volume-odd-"+name] = func() []byte {
			b, _, _ := VolumeFile(v, true)
			return b
		}
		cases["job-odd-"+name] = func() []byte {
			// A job's flags not in NFC are refused (TestGroupJobRefusesAFlagNotInNFC): given
			// in NFC, which is what hclwrite wrote of them.
			b, _, _ := GroupJob(g, JobOptions{Image: n, Args: []string{n, n}, Namespace: n})
			return b
		}
	}
	return cases
}

// TestExportGolden: every exporter writes the bytes of its golden file, the output of the
// hclwrite-based exporters volctl had before its own writer (internal/nomad/hcl.go), but for
// the job IDs and task names written since as Nomad takes them (JobID, taskName: round 59).
func TestExportGolden(t *testing.T) {
	for name, render := range goldenCases() {
		got := render()
		path := filepath.Join("testdata", name+".golden")
		if *update {
			if err := os.MkdirAll("testdata", 0o755); err != nil {
				t.Fatal(err)
			}
			if err := os.WriteFile(path, got, 0o644); err != nil {
				t.Fatal(err)
			}
			continue
		}
		want, err := os.ReadFile(path)
		if err != nil {
			t.Fatalf("%s: %v (run with -update to write it)", name, err)
		}
		if !bytes.Equal(got, want) {
			t.Errorf("%s: output differs from %s\n got:\n%s\nwant:\n%s", name, path, got, want)
		}
	}
}
