package spec

import (
	"bufio"
	"bytes"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"

	"github.com/volctl/volctl/internal/nomadcorpus"
)

// nomadCorpus is shared/compat/nomad-specs, beside the repository root; a test that needs it
// skips without it (fails under CI=true).
func nomadCorpus(t testing.TB) string {
	t.Helper()
	return nomadcorpus.Dir(t)
}

type corpusEntry struct {
	file string
	kind string // "csi" or "host"
	verb Verb
}

// readSources parses SOURCES.txt: tab-separated lines whose last column starts with the kind
// and verb, "csi create", "csi register", "csi create+register" or "host ...".
func readSources(t testing.TB, dir string) []corpusEntry {
	t.Helper()
	raw, err := os.ReadFile(filepath.Join(dir, "SOURCES.txt"))
	if err != nil {
		t.Fatal(err)
	}
	var out []corpusEntry
	sc := bufio.NewScanner(bytes.NewReader(raw))
	for sc.Scan() {
		line := sc.Text()
		if strings.TrimSpace(line) == "" || strings.HasPrefix(line, "#") {
			continue
		}
		cols := strings.Split(line, "\t")
		if len(cols) < 2 {
			t.Fatalf("SOURCES.txt: cannot read line %q", line)
		}
		fields := strings.Fields(cols[len(cols)-1])
		e := corpusEntry{file: cols[0]}
		switch {
		case len(fields) >= 1 && fields[0] == "host":
			e.kind = "host"
		case len(fields) >= 2 && fields[0] == "csi" && fields[1] == "create":
			e.kind, e.verb = "csi", VerbCreate
		case len(fields) >= 2 && fields[0] == "csi" && fields[1] == "register":
			e.kind, e.verb = "csi", VerbRegister
		case len(fields) >= 2 && fields[0] == "csi" && fields[1] == "create+register":
			e.kind, e.verb = "csi", VerbAny
		default:
			t.Fatalf("SOURCES.txt: unknown kind in %q", cols[len(cols)-1])
		}
		out = append(out, e)
	}
	return out
}

// TestNomadCorpus loads every real Nomad volume spec: CSI ones must validate for the verb
// SOURCES.txt names, host ones must be refused with exactly one clear error.
func TestNomadCorpus(t *testing.T) {
	dir := nomadCorpus(t)
	entries := readSources(t, dir)
	listed := map[string]bool{}
	var csi, host int
	for _, e := range entries {
		listed[e.file] = true
		t.Run(e.file, func(t *testing.T) {
			src, err := os.ReadFile(filepath.Join(dir, e.file))
			if err != nil {
				t.Fatal(err)
			}
			p := NewParser()
			v, diags := p.ParseVolume(e.file, src, e.verb)
			var rendered strings.Builder
			p.WriteDiagnostics(&rendered, diags, 0, false)
			switch e.kind {
			case "csi":
				csi++
				if diags.HasErrors() || v == nil {
					t.Fatalf("for verb %q:\n%s", e.verb, rendered.String())
				}
				if v.Type != "csi" || len(v.Capabilities) == 0 {
					t.Errorf("decoded %+v", v)
				}
			case "host":
				host++
				if len(diags) != 1 || !diags.HasErrors() || diags[0].Summary != "Host volumes are not supported" {
					t.Fatalf("want exactly one host-volume error, got:\n%s", rendered.String())
				}
				if !strings.Contains(diags[0].Detail, "CSI volumes only") || !strings.Contains(diags[0].Detail, "nomad volume create") {
					t.Errorf("detail does not explain: %s", diags[0].Detail)
				}
			}
		})
	}
	files, _ := filepath.Glob(filepath.Join(dir, "*.hcl"))
	for _, f := range files {
		if !listed[filepath.Base(f)] {
			t.Errorf("%s is not listed in SOURCES.txt, so nothing checks it", filepath.Base(f))
		}
	}
	if csi == 0 || host == 0 {
		t.Fatalf("corpus has %d CSI and %d host specs; expected both", csi, host)
	}
}

// TestNomadCorpusValues checks what the HCL1-syntax files decode to, not only that they load.
func TestNomadCorpusValues(t *testing.T) {
	dir := nomadCorpus(t)
	load := func(name string) *Volume {
		t.Helper()
		src, err := os.ReadFile(filepath.Join(dir, name))
		if err != nil {
			t.Fatal(err)
		}
		v, diags := ParseVolume(name, src, VerbAny)
		if diags.HasErrors() {
			t.Fatalf("%s: %v", name, diags)
		}
		return v
	}

	tmpl := load("command__asset__volume.csi.hcl")
	wantTopo := &TopologyRequest{
		Required:  []Topology{{Segments: map[string]string{"rack": "R1"}}, {Segments: map[string]string{"rack": "R2", "zone": "us-east-1a"}}},
		Preferred: []Topology{{Segments: map[string]string{"rack": "R1"}}},
	}
	if !reflect.DeepEqual(tmpl.TopologyRequest, wantTopo) {
		t.Errorf("template topology = %+v, want %+v", tmpl.TopologyRequest, wantTopo)
	}
	wantCaps := []Capability{{SingleNodeWriter, FileSystem}, {SingleNodeReaderOnly, BlockDevice}}
	if !reflect.DeepEqual(tmpl.Capabilities, wantCaps) {
		t.Errorf("template capabilities = %+v, want %+v", tmpl.Capabilities, wantCaps)
	}
	if tmpl.CapacityMin != 10<<30 || tmpl.CapacityMax != 20e9 {
		t.Errorf("template capacity = %d..%d", tmpl.CapacityMin, tmpl.CapacityMax)
	}
	if tmpl.Secrets.Plain()["example_secret"] != "xyzzy" || tmpl.Context["endpoint"] != "http://192.168.1.101:9425" {
		t.Errorf("template maps: secrets %v context %v", tmpl.Secrets.Plain(), tmpl.Context)
	}

	ebs := load("e2e__csi__input__ebs-volume0.hcl")
	if got := ebs.TopologyRequest.Required[0].Segments["topology.ebs.csi.aws.com/zone"]; got != "us-east-1b" {
		t.Errorf("quoted dotted segment key: got %q", got)
	}
	if ebs.ID != "ebs-vol[0]" || ebs.Parameters["tagSpecification_1"] != "Name=e2e-testing-vol0" {
		t.Errorf("ebs-volume0 = %+v", ebs)
	}

	docs := load("website__content__docs__other-specifications__volume__csi.mdx__block1.hcl")
	wantReq := []Topology{{Segments: map[string]string{"rack": "R2"}}, {Segments: map[string]string{"rack": "R1", "zone": "us-east-1a"}}}
	if !reflect.DeepEqual(docs.TopologyRequest.Required, wantReq) {
		t.Errorf("docs topology = %+v, want %+v", docs.TopologyRequest.Required, wantReq)
	}

	ebsDemo := load("demo__csi__aws__ebs__example-volume.hcl")
	if !reflect.DeepEqual(ebsDemo.Capabilities, []Capability{{SingleNodeWriter, FileSystem}}) {
		t.Errorf("legacy flat form: %+v", ebsDemo.Capabilities)
	}
	juice := load("demo__csi__juicefs-csi-plugin__juicefs-volume.hcl")
	if juice.Secrets.Plain()["access-key"] != "administrator" {
		t.Errorf("hyphenated secret key lost: %v", juice.Secrets.Plain())
	}
}
