package spec

import (
	"bufio"
	"bytes"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"reflect"
	"slices"
	"sort"
	"strings"
	"testing"

	"github.com/volctl/volctl/internal/nomadcorpus"
)

// The compatibility corpus, testdata/nomadcompat, holds volume specs written along each axis on
// which volctl's reader and Nomad's (HCL1, in `nomad volume register` and `create`, which parse
// the file alike before they contact the server) could part: HCL2 expressions, templates,
// comments, numbers and strings in each other's place, duplicates, blocks as attributes,
// unknown and re-cased names, JSON, byte order marks, line ends, several volumes in one file,
// mount options and topology in each form, maps of other values. EXPECT lists, for each file
// (and for each file of the real corpus, shared/compat/nomad-specs, as corpus/NAME), what volctl
// answers ("ok" or "refused", for the rules common to register and create), what Nomad answers
// ("ok", "refused", or "differs": accepted, but read otherwise than volctl reads it) and, where
// the two differ, why: a phrase of docs/specs.md, which must document the difference.
//
// TestCompatCorpusVolctlAnswers pins volctl's answer for every file (its verdict in EXPECT, its
// diagnostics and what it would send in golden/NAME.txt); TestNomadReadsCompatCorpus
// (NOMAD_BIN) checks Nomad's answer against EXPECT and fails on any disagreement EXPECT does
// not document.

const compatDir = "testdata/nomadcompat"

type compatRow struct {
	file, volctl, nomad, why string
	line                     int
}

// readCompatExpect parses EXPECT: tab-separated file, volctl, nomad and, where they differ,
// the docs/specs.md phrase that documents why.
func readCompatExpect(t *testing.T) []compatRow {
	t.Helper()
	raw, err := os.ReadFile(filepath.Join(compatDir, "EXPECT"))
	if err != nil {
		t.Fatal(err)
	}
	var rows []compatRow
	sc := bufio.NewScanner(bytes.NewReader(raw))
	for n := 1; sc.Scan(); n++ {
		line := sc.Text()
		if strings.TrimSpace(line) == "" || strings.HasPrefix(line, "#") {
			continue
		}
		cols := strings.Split(line, "\t")
		if len(cols) < 3 || len(cols) > 4 {
			t.Fatalf("EXPECT:%d: want file, volctl, nomad and maybe why, tab-separated: %q", n, line)
		}
		r := compatRow{file: cols[0], volctl: cols[1], nomad: cols[2], line: n}
		if len(cols) == 4 {
			r.why = cols[3]
		}
		if r.volctl != "ok" && r.volctl != "refused" || !slices.Contains([]string{"ok", "refused", "differs"}, r.nomad) {
			t.Fatalf("EXPECT:%d: volctl must be ok or refused, nomad ok, refused or differs: %q", n, line)
		}
		rows = append(rows, r)
	}
	return rows
}

// compatFiles maps each EXPECT name to its path: the files of compatDir, and the real corpus's
// as corpus/NAME when it is there.
func compatFiles(t *testing.T, withCorpus bool) map[string]string {
	t.Helper()
	out := map[string]string{}
	entries, err := os.ReadDir(compatDir)
	if err != nil {
		t.Fatal(err)
	}
	for _, e := range entries {
		if e.IsDir() || e.Name() == "EXPECT" {
			continue
		}
		out[e.Name()] = filepath.Join(compatDir, e.Name())
	}
	if withCorpus {
		dir := nomadCorpus(t)
		files, _ := filepath.Glob(filepath.Join(dir, "*.hcl"))
		for _, f := range files {
			out["corpus/"+filepath.Base(f)] = f
		}
	}
	return out
}

// sentVolume is a volume as Nomad receives it, in the fields a spec sets: what volctl would
// send for a spec it reads (volctlSends), or what the nomad CLI sent (nomadSent).
type sentVolume struct {
	ID, Name, ExternalID, Namespace, PluginID, SnapshotID, CloneID string
	CapacityMin, CapacityMax                                       int64
	Capabilities                                                   [][2]string
	FSType                                                         string
	MountFlags                                                     []string
	Secrets, Parameters, Context                                   map[string]string
	Required, Preferred                                            []map[string]string
}

func volctlSends(v *Volume) sentVolume {
	s := sentVolume{ID: v.ID, Name: v.Name, ExternalID: v.ExternalID, Namespace: v.Namespace, PluginID: v.PluginID,
		SnapshotID: v.SnapshotID, CloneID: v.CloneID, CapacityMin: v.CapacityMin, CapacityMax: v.CapacityMax,
		Secrets: v.Secrets.Plain(), Parameters: v.Parameters, Context: v.Context}
	for _, c := range v.Capabilities {
		s.Capabilities = append(s.Capabilities, [2]string{string(c.AccessMode), string(c.AttachmentMode)})
	}
	if m := v.MountOptions; m != nil {
		s.FSType, s.MountFlags = m.FSType, m.MountFlags.Plain()
	}
	if tr := v.TopologyRequest; tr != nil {
		for _, x := range tr.Required {
			s.Required = append(s.Required, x.Segments)
		}
		for _, x := range tr.Preferred {
			s.Preferred = append(s.Preferred, x.Segments)
		}
	}
	return s.normal()
}

// normal makes empty and absent alike, and names the namespace Nomad puts a volume without one in.
func (s sentVolume) normal() sentVolume {
	if s.Namespace == "" {
		s.Namespace = DefaultNamespace
	}
	for _, m := range []*map[string]string{&s.Secrets, &s.Parameters, &s.Context} {
		if len(*m) == 0 {
			*m = nil
		}
	}
	if len(s.MountFlags) == 0 {
		s.MountFlags = nil
	}
	return s
}

// nomadSent decodes the body of the CLI's PUT /v1/volume/csi/ID (or .../create).
func nomadSent(t *testing.T, body []byte) sentVolume {
	t.Helper()
	var req struct {
		Volumes []struct {
			ID, Name, ExternalID, Namespace, PluginID, SnapshotID, CloneID string
			RequestedCapacityMin, RequestedCapacityMax                     int64
			RequestedCapabilities                                          []struct{ AccessMode, AttachmentMode string }
			MountOptions                                                   *struct {
				FSType     string
				MountFlags []string
			}
			RequestedTopologies *struct {
				Required, Preferred []*struct{ Segments map[string]string }
			}
			Secrets, Parameters, Context map[string]string
		}
	}
	if err := json.Unmarshal(body, &req); err != nil || len(req.Volumes) != 1 {
		t.Fatalf("cannot read the CLI's request (%v): %s", err, body)
	}
	v := req.Volumes[0]
	s := sentVolume{ID: v.ID, Name: v.Name, ExternalID: v.ExternalID, Namespace: v.Namespace, PluginID: v.PluginID,
		SnapshotID: v.SnapshotID, CloneID: v.CloneID, CapacityMin: v.RequestedCapacityMin, CapacityMax: v.RequestedCapacityMax,
		Secrets: v.Secrets, Parameters: v.Parameters, Context: v.Context}
	for _, c := range v.RequestedCapabilities {
		mode := c.AccessMode
		if mode == legacyReader { // volctl reads it as its new spelling (docs/specs.md)
			mode = string(SingleNodeReaderOnly)
		}
		s.Capabilities = append(s.Capabilities, [2]string{mode, c.AttachmentMode})
	}
	if m := v.MountOptions; m != nil {
		s.FSType, s.MountFlags = m.FSType, m.MountFlags
	}
	if tr := v.RequestedTopologies; tr != nil {
		for _, x := range tr.Required {
			if x != nil {
				s.Required = append(s.Required, x.Segments)
			}
		}
		for _, x := range tr.Preferred {
			if x != nil {
				s.Preferred = append(s.Preferred, x.Segments)
			}
		}
	}
	return s.normal()
}

// serverRefuses is what Nomad's server refuses of a volume the CLI sent, before it looks for
// the plugin: CSIVolume.Validate in nomad/structs/csi.go (the namespace, empty, is the
// request's).
func serverRefuses(s sentVolume) string {
	var errs []string
	if s.ID == "" {
		errs = append(errs, "missing volume id")
	}
	if s.PluginID == "" {
		errs = append(errs, "missing plugin id")
	}
	if s.SnapshotID != "" && s.CloneID != "" {
		errs = append(errs, "only one of snapshot_id and clone_id is allowed")
	}
	if len(s.Capabilities) == 0 {
		errs = append(errs, "must include at least one capability block")
	}
	for _, x := range s.Required {
		if len(x) == 0 {
			errs = append(errs, "required topology is missing segments field")
		}
	}
	for _, x := range s.Preferred {
		if len(x) == 0 {
			errs = append(errs, "preferred topology is missing segments field")
		}
	}
	return strings.Join(errs, ", ")
}

// volctlAnswer is what volctl makes of a file, for the rules common to both verbs: the
// volume (nil when refused) and the golden text, its rendered diagnostics and what it sends.
func volctlAnswer(t *testing.T, name string, src []byte) (*Volume, string) {
	t.Helper()
	p := NewParser()
	v, diags := p.ParseVolume(name, src, VerbAny)
	var b strings.Builder
	if v == nil {
		b.WriteString("refused\n")
	} else {
		b.WriteString("ok\n")
	}
	if err := p.WriteDiagnostics(&b, diags, 100, false); err != nil {
		t.Fatal(err)
	}
	if v != nil {
		out, err := json.MarshalIndent(volctlSends(v), "", "  ")
		if err != nil {
			t.Fatal(err)
		}
		b.WriteString("sends ")
		b.Write(out)
		b.WriteString("\n")
	}
	return v, b.String()
}

// documented checks that a row whose answers differ says why, in words docs/specs.md has.
func documented(t *testing.T, r compatRow, docs string) {
	t.Helper()
	if r.volctl == r.nomad {
		if r.why != "" {
			t.Errorf("EXPECT:%d: %s: volctl and Nomad agree, but a difference is documented: %q", r.line, r.file, r.why)
		}
		return
	}
	switch {
	case r.why == "":
		t.Errorf("EXPECT:%d: %s: volctl answers %s, Nomad %s, and no docs/specs.md phrase says why", r.line, r.file, r.volctl, r.nomad)
	case !strings.Contains(docs, r.why):
		t.Errorf("EXPECT:%d: %s: docs/specs.md does not say %q", r.line, r.file, r.why)
	}
}

func specsDoc(t *testing.T) string {
	t.Helper()
	b, err := os.ReadFile(filepath.Join("..", "..", "docs", "specs.md"))
	if err != nil {
		t.Fatal(err)
	}
	return strings.Join(strings.Fields(string(b)), " ") // a phrase may wrap
}

// TestCompatCorpusVolctlAnswers pins volctl's answer to every file of the compatibility
// corpus: the verdict EXPECT gives, the diagnostics and values of golden/NAME.txt (go test
// ./internal/spec -run TestCompatCorpus -update rewrites them), and a documented reason for
// every answer that differs from Nomad's.
func TestCompatCorpusVolctlAnswers(t *testing.T) {
	files := compatFiles(t, false)
	rows := readCompatExpect(t)
	docs := specsDoc(t)
	seen := map[string]bool{}
	for _, r := range rows {
		if seen[r.file] {
			t.Errorf("EXPECT:%d: %s listed twice", r.line, r.file)
		}
		seen[r.file] = true
		documented(t, r, docs)
		if strings.HasPrefix(r.file, "corpus/") {
			continue // TestNomadCorpus and the NOMAD_BIN test read those
		}
		path, ok := files[r.file]
		if !ok {
			t.Errorf("EXPECT:%d: no file %s in %s", r.line, r.file, compatDir)
			continue
		}
		t.Run(r.file, func(t *testing.T) {
			src, err := os.ReadFile(path)
			if err != nil {
				t.Fatal(err)
			}
			v, got := volctlAnswer(t, r.file, src)
			if verdict := map[bool]string{true: "ok", false: "refused"}[v != nil]; verdict != r.volctl {
				t.Errorf("volctl: %s, EXPECT:%d says %s\n%s", verdict, r.line, r.volctl, got)
			}
			checkGolden(t, filepath.Join(compatDir, "golden", r.file+".txt"), got)
		})
	}
	for name := range files {
		if !seen[name] {
			t.Errorf("%s has no line in EXPECT", name)
		}
	}
}

// TestNomadReadsCompatCorpus runs every file of the compatibility corpus and of the real one
// through `nomad volume register` (NOMAD_BIN's), against a stand-in for the API that records
// what the CLI sends and answers as Nomad's server does to what its validation refuses
// (serverRefuses). Nomad's answer must be EXPECT's; where it differs from volctl's (a verdict,
// or a value volctl would send otherwise), EXPECT must say why in docs/specs.md's words.
//
// Opt-in: NOMAD_BIN names a Nomad binary. No agent and no root needed.
func TestNomadReadsCompatCorpus(t *testing.T) {
	bin := os.Getenv("NOMAD_BIN")
	if bin == "" {
		t.Skip("set NOMAD_BIN to a Nomad binary to compare how Nomad and volctl read each file of testdata/nomadcompat and of the Nomad spec corpus")
	}
	files := compatFiles(t, true)
	rows := readCompatExpect(t)
	docs := specsDoc(t)
	byFile := map[string]compatRow{}
	for _, r := range rows {
		byFile[r.file] = r
	}
	var table []string
	names := make([]string, 0, len(files))
	for name := range files {
		names = append(names, name)
	}
	sort.Strings(names)
	for _, name := range names {
		t.Run(name, func(t *testing.T) {
			src, err := os.ReadFile(files[name])
			if err != nil {
				t.Fatal(err)
			}
			r, ok := byFile[name]
			if !ok {
				t.Fatalf("%s has no line in EXPECT", name)
			}
			v, _ := volctlAnswer(t, name, src)
			verdict, said, sent := nomadAnswer(t, bin, files[name])
			if verdict == "ok" && sent != nil && v != nil {
				if ours := volctlSends(v); !reflect.DeepEqual(ours, *sent) {
					verdict = "differs"
					a, _ := json.Marshal(ours)
					b, _ := json.Marshal(*sent)
					said = fmt.Sprintf("volctl sends %s, Nomad %s", a, b)
				}
			}
			ours := map[bool]string{true: "ok", false: "refused"}[v != nil]
			table = append(table, fmt.Sprintf("%s\t%s\t%s\t%s", name, ours, verdict, said))
			if verdict != r.nomad {
				t.Errorf("Nomad: %s (%s), EXPECT:%d says %s", verdict, said, r.line, r.nomad)
			}
			if ours != r.volctl {
				t.Errorf("volctl: %s, EXPECT:%d says %s", ours, r.line, r.volctl)
			}
			documented(t, compatRow{file: name, volctl: ours, nomad: verdict, why: r.why, line: r.line}, docs)
		})
	}
	t.Logf("file\tvolctl\tnomad\tnomad said\n%s", strings.Join(table, "\n"))
}

// nomadAnswer runs `nomad volume register file` against a recording stand-in for the API:
// "ok" with what the CLI sent, or "refused" with what the CLI (or, for what it sent, Nomad's
// validation) said. A host volume the CLI sends is "ok" with nothing to compare.
func nomadAnswer(t *testing.T, bin, file string) (verdict, said string, sent *sentVolume) {
	t.Helper()
	s := nomadcorpus.Register(bin, file)
	switch {
	case s.Body != nil && !strings.HasPrefix(s.Path, "/v1/volume/csi/"):
		return "ok", "a " + s.Path + " request", nil
	case s.Body != nil:
		v := nomadSent(t, s.Body)
		if why := serverRefuses(v); why != "" {
			return "refused", "server: validation: " + why, &v
		}
		return "ok", "", &v
	case s.Err == nil:
		t.Fatalf("nomad volume register %s sent nothing, and succeeded:\n%s", file, s.Out)
	}
	return "refused", strings.Join(strings.Fields(string(s.Out)), " "), nil
}
