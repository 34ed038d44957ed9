package nomad

import (
	"fmt"
	"os"
	"path/filepath"
	"reflect"
	"testing"

	hcl1 "github.com/hashicorp/hcl"

	"github.com/volctl/volctl/internal/nomadcorpus"
	"github.com/volctl/volctl/internal/spec"
)

// TestCorpusExportReadsBackAsNomadReadsIt: every CSI spec of the Nomad spec corpus that volctl
// takes (for register, else create, given an external ID as a created volume has one) is
// exported with --include-secrets, and the file is read back, field by field, through HCL1 —
// the parser `nomad volume register` reads it with — and through volctl's own parser: ID, name,
// namespace, plugin, external ID, capacity, capabilities, mount options, topology request,
// secrets, parameters and context are what volctl has. The end-to-end comparisons against a
// real Nomad need NOMAD_BIN (TestNomadRegisterSendsWhatNomadCLISends); without it, nothing
// read a corpus file's export back.
func TestCorpusExportReadsBackAsNomadReadsIt(t *testing.T) {
	t.Parallel()
	dir := nomadcorpus.Dir(t)
	files, err := filepath.Glob(filepath.Join(dir, "*.hcl"))
	if err != nil {
		t.Fatal(err)
	}
	compared := 0
	for _, file := range files {
		src, err := os.ReadFile(file)
		if err != nil {
			t.Fatal(err)
		}
		var v *spec.Volume
		for _, verb := range []spec.Verb{spec.VerbRegister, spec.VerbCreate} {
			if got, diags := spec.NewParser().ParseVolume(filepath.Base(file), src, verb); got != nil && !diags.HasErrors() {
				v = got
				break
			}
		}
		if v == nil {
			continue // a host volume spec: TestNomadCorpus holds its refusal
		}
		compared++
		if v.ExternalID == "" {
			v.ExternalID = "created-" + v.ID // the plugin's, once created
		}
		name := filepath.Base(file)
		b, _, err := VolumeFile(*v, true)
		if err != nil {
			t.Errorf("%s: export: %v", name, err)
			continue
		}
		var f map[string]any
		if err := hcl1.Decode(&f, string(b)); err != nil {
			t.Errorf("%s: HCL1 does not read the export: %v\n%s", name, err, b)
			continue
		}
		got := fromHCL1(f)
		want := nomadReads(*v)
		if !reflect.DeepEqual(got, want) {
			for k := range want {
				if !reflect.DeepEqual(got[k], want[k]) {
					t.Errorf("%s: HCL1 reads %s of the export as %#v, want %#v", name, k, got[k], want[k])
				}
			}
			for k := range got {
				if _, ok := want[k]; !ok {
					t.Errorf("%s: HCL1 reads %s = %#v in the export, which volctl does not have", name, k, got[k])
				}
			}
		}
		back, diags := spec.NewParser().ParseVolume(name, b, spec.VerbRegister)
		if diags.HasErrors() {
			t.Errorf("%s: volctl does not read its export back: %s\n%s", name, diags.Error(), b)
			continue
		}
		if !reflect.DeepEqual(nomadReads(*back), want) {
			t.Errorf("%s: volctl reads its export back as %#v, want %#v", name, nomadReads(*back), want)
		}
	}
	if compared == 0 {
		t.Fatalf("no CSI volume spec in the corpus at %s", dir)
	}
}

// nomadReads is what of v an exported file gives Nomad, keyed by the file's names, as
// fromHCL1 gives it from a file: strings, sizes in bytes, capabilities and topologies in order.
func nomadReads(v spec.Volume) map[string]any {
	out := map[string]any{"id": v.ID, "type": "csi", "plugin_id": v.PluginID, "external_id": v.ExternalID,
		"namespace": v.Namespace}
	if v.Name != "" {
		out["name"] = v.Name
	}
	if v.CapacityMin > 0 {
		out["capacity_min"] = v.CapacityMin
	}
	if v.CapacityMax > 0 {
		out["capacity_max"] = v.CapacityMax
	}
	var caps []string
	for _, c := range v.Capabilities {
		caps = append(caps, string(c.AccessMode)+"/"+string(c.AttachmentMode))
	}
	out["capability"] = caps
	if mo := v.MountOptions; mo != nil && (mo.FSType != "" || len(mo.MountFlags) > 0) {
		out["mount_options"] = fmt.Sprintf("%q %q", mo.FSType, mo.MountFlags.Plain())
	}
	if tr := v.TopologyRequest; tr != nil && (len(tr.Required) > 0 || len(tr.Preferred) > 0) {
		var topos []string
		for _, part := range []struct {
			name string
			ts   []spec.Topology
		}{{"required", tr.Required}, {"preferred", tr.Preferred}} {
			for _, tp := range part.ts {
				topos = append(topos, fmt.Sprintf("%s %v", part.name, tp.Segments))
			}
		}
		out["topology_request"] = topos
	}
	for k, m := range map[string]map[string]string{"secrets": v.Secrets.Plain(), "parameters": v.Parameters, "context": v.Context} {
		if len(m) > 0 {
			out[k] = fmt.Sprint(m)
		}
	}
	return out
}

// fromHCL1 is what HCL1 read of an exported file, in nomadReads' terms. HCL1 reads each block
// and each map as a list of maps.
func fromHCL1(f map[string]any) map[string]any {
	out := map[string]any{"namespace": spec.DefaultNamespace} // the request's, when the file names none
	one := func(x any) map[string]any {
		if l, ok := x.([]map[string]any); ok && len(l) == 1 {
			return l[0]
		}
		return map[string]any{"unread": x}
	}
	strs := func(x any) map[string]string {
		m := map[string]string{}
		for k, v := range one(x) {
			m[k] = fmt.Sprint(v)
		}
		return m
	}
	for k, x := range f {
		switch k {
		case "capacity_min", "capacity_max":
			n, err := spec.ParseSize(fmt.Sprint(x))
			if err != nil {
				out[k] = fmt.Sprintf("%v (%v)", x, err)
				continue
			}
			out[k] = n
		case "capability":
			var caps []string
			l, _ := x.([]map[string]any)
			for _, c := range l {
				caps = append(caps, fmt.Sprint(c["access_mode"])+"/"+fmt.Sprint(c["attachment_mode"]))
			}
			out[k] = caps
		case "mount_options":
			mo := one(x)
			var flags []string
			l, _ := mo["mount_flags"].([]any)
			for _, fl := range l {
				flags = append(flags, fmt.Sprint(fl))
			}
			fs, _ := mo["fs_type"].(string)
			out[k] = fmt.Sprintf("%q %q", fs, flags)
		case "topology_request":
			var topos []string
			tr := one(x)
			for _, part := range []string{"required", "preferred"} {
				if tr[part] == nil {
					continue
				}
				l, _ := one(tr[part])["topology"].([]map[string]any)
				for _, tp := range l {
					topos = append(topos, fmt.Sprintf("%s %v", part, strs(tp["segments"])))
				}
			}
			out[k] = topos
		case "secrets", "parameters", "context":
			out[k] = fmt.Sprint(strs(x))
		default:
			out[k] = x
		}
	}
	return out
}
