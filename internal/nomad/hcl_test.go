package nomad

import (
	"bytes"
	"fmt"
	"maps"
	"math/rand/v2"
	"slices"
	"strings"
	"testing"

	hcl1 "github.com/hashicorp/hcl"
	"github.com/hashicorp/hcl/v2"
	"github.com/hashicorp/hcl/v2/hclsyntax"
	"github.com/hashicorp/hcl/v2/hclwrite"
	"github.com/zclconf/go-cty/cty"

	"github.com/volctl/volctl/internal/spec"
)

// Test-only use of hclwrite: volctl's writer is checked against it, byte for byte, here; the
// binary does not link it (TestBinaryLeavesOutHCLWrite in cmd/volctl).

// TestWriterMatchesHCLWrite: on random bodies (attributes of every kind of value, nested
// blocks with labels, comments, blank lines; names and strings with template sequences,
// escapes, control and combining characters, wide and invalid UTF-8), volctl's writer writes
// exactly the bytes hclwrite writes, and they parse back to the same attributes and blocks.
func TestWriterMatchesHCLWrite(t *testing.T) {
	for seed := range uint64(3000) {
		r := rand.New(rand.NewPCG(seed, 16))
		body := randomBody(r, 0)
		got := body.bytes()
		ref := hclwrite.NewEmptyFile()
		toHCLWrite(body, ref.Body())
		if want := ref.Bytes(); !bytes.Equal(got, want) {
			t.Fatalf("seed %d: volctl's writer and hclwrite differ at byte %d\n got:\n%s\nwant:\n%s", seed, firstDiff(got, want), got, want)
		}
		f, diags := hclsyntax.ParseConfig(got, "random.hcl", hcl.InitialPos)
		if diags.HasErrors() {
			t.Fatalf("seed %d: the output does not parse: %s\n%s", seed, diags.Error(), got)
		}
		if err := sameBody(body, f.Body.(*hclsyntax.Body)); err != nil {
			t.Fatalf("seed %d: %v\n%s", seed, err, got)
		}
	}
}

func firstDiff(a, b []byte) int {
	for i := range min(len(a), len(b)) {
		if a[i] != b[i] {
			return i
		}
	}
	return min(len(a), len(b))
}

// TestWriterEscapesTemplates: the escapes the exported files depend on, spelled out.
func TestWriterEscapesTemplates(t *testing.T) {
	for in, want := range map[string]string{
		"${NOMAD_ALLOC_INDEX}":                 `"$${NOMAD_ALLOC_INDEX}"`,
		"%{ if x }":                            `"%%{ if x }"`,
		"$$ and %% and 100%":                   `"$$ and %% and 100%"`,
		"a\"b\\c\nd\re\tf":                     `"a\"b\\c\nd\re\tf"`,
		"nul\x00 \u200b \U000e0001 日本 e\u0301": `"nul\u0000 \u200b \U000e0001 日本 ` + "\u00e9" + `"`,
	} {
		b := &hclBody{}
		b.attr("x", hclStr(in))
		if got := string(b.bytes()); got != "x = "+want+"\n" {
			t.Errorf("%q written as %s, want x = %s", in, got, want)
		}
	}
}

var (
	identPieces = []string{"a", "b", "id", "name", "_", "-", "x1", "é", "Ω", "日本", "e\u0301", "long_attribute_name"}
	strPieces   = []string{"a", " ", "$", "%", "{", "}", "${", "%{", "$${", "%%{", "\\", "\"", "\n", "\r", "\t",
		"\x00", "\x1b", "\x7f", "\u00a0", "\u200b", "\u2028", "e\u0301", "é", "日本", "👩\u200d👧", "🇫🇷", "\xff", "\xc3",
		"\ue000", "\U0010fffd", "\U000e0001", "~", "#", "//", "/*", "=", "<<EOF"}
)

func randomIdent(r *rand.Rand) string {
	for {
		var sb strings.Builder
		for range 1 + r.IntN(3) {
			sb.WriteString(identPieces[r.IntN(len(identPieces))])
		}
		if s := sb.String(); hclsyntax.ValidIdentifier(s) {
			return s
		}
	}
}

func randomString(r *rand.Rand, noNewline bool) string {
	var sb strings.Builder
	for range r.IntN(6) {
		p := strPieces[r.IntN(len(strPieces))]
		if noNewline && strings.ContainsAny(p, "\n\r\u2028") {
			continue
		}
		sb.WriteString(p)
	}
	return sb.String()
}

// randomKey is an object key: an identifier (written bare) or any string (quoted).
func randomKey(r *rand.Rand) string {
	if r.IntN(2) == 0 {
		return randomIdent(r)
	}
	return randomString(r, false)
}

func randomValue(r *rand.Rand, depth int, inline bool) hclValue {
	n := 5
	if depth > 2 {
		n = 3
	}
	switch r.IntN(n) {
	case 0:
		return hclStr(randomString(r, false))
	case 1:
		return hclInt(r.Int64() >> r.IntN(64) * int64(1-2*r.IntN(2)))
	case 2:
		return hclBoolean(r.IntN(2) == 0)
	case 3:
		vals := make([]hclValue, r.IntN(4))
		for i := range vals {
			vals[i] = randomValue(r, depth+1, true)
		}
		return hclTuple(vals...)
	default:
		m := map[string]hclValue{}
		if inline {
			return hclObj(m)
		}
		for range r.IntN(5) {
			m[randomKey(r)] = randomValue(r, depth+1, false)
		}
		return hclObj(m)
	}
}

func randomBody(r *rand.Rand, depth int) *hclBody {
	b := &hclBody{}
	names := map[string]bool{}
	for range r.IntN(8) {
		switch k := r.IntN(10); {
		case k < 5:
			name := randomIdent(r)
			if names[name] {
				continue // hclwrite would replace the first; volctl's exporters set a name once
			}
			names[name] = true
			b.attr(name, randomValue(r, 0, false))
		case k < 7 && depth < 3:
			labels := make([]string, r.IntN(3))
			for i := range labels {
				labels[i] = randomString(r, false)
			}
			*b.block(randomIdent(r), labels...) = *randomBody(r, depth+1)
		case k < 9:
			b.comment(randomString(r, true))
		default:
			b.blank()
		}
	}
	return b
}

// toCty is v as cty holds it, its strings (and keys) passed through str.
func toCty(v hclValue, str func(string) string) cty.Value {
	switch v.kind {
	case hclString:
		return cty.StringVal(str(v.str))
	case hclNumber:
		return cty.NumberIntVal(v.num)
	case hclBool:
		return cty.BoolVal(v.bit)
	case hclList:
		if len(v.list) == 0 {
			return cty.EmptyTupleVal
		}
		vals := make([]cty.Value, len(v.list))
		for i, e := range v.list {
			vals[i] = toCty(e, str)
		}
		return cty.TupleVal(vals)
	default:
		if len(v.obj) == 0 {
			return cty.EmptyObjectVal
		}
		m := map[string]cty.Value{}
		for k, e := range v.obj {
			m[str(k)] = toCty(e, str)
		}
		return cty.ObjectVal(m)
	}
}

func toHCLWrite(b *hclBody, to *hclwrite.Body) {
	for _, it := range b.items {
		switch it.kind {
		case hclAttr:
			to.SetAttributeValue(it.name, toCty(it.value, same))
		case hclBlock:
			toHCLWrite(it.body, to.AppendNewBlock(it.name, it.labels).Body())
		case hclComment:
			to.AppendUnstructuredTokens(hclwrite.Tokens{{Type: hclsyntax.TokenComment, Bytes: []byte("# " + it.name + "\n")}})
		case hclBlank:
			to.AppendNewline()
		}
	}
}

func same(s string) string { return s }

// readBack is s as it reads back from a written file: each byte of invalid UTF-8 became
// U+FFFD when written, and the string is in normal form C.
func readBack(s string) string {
	var sb strings.Builder
	for _, r := range s {
		sb.WriteRune(r)
	}
	return cty.NormalizeString(sb.String())
}

// sameBody: the parsed body has b's attributes with b's values and b's blocks in order.
func sameBody(b *hclBody, parsed *hclsyntax.Body) error {
	attrs, blocks := 0, 0
	for _, it := range b.items {
		switch it.kind {
		case hclAttr:
			attrs++
			a, ok := parsed.Attributes[it.name]
			if !ok {
				return fmt.Errorf("attribute %s not read back", it.name)
			}
			got, diags := a.Expr.Value(nil)
			if diags.HasErrors() {
				return fmt.Errorf("attribute %s: %s", it.name, diags.Error())
			}
			if want := toCty(it.value, readBack); !got.Type().Equals(want.Type()) || !got.Equals(want).True() {
				return fmt.Errorf("attribute %s read back as %#v, want %#v", it.name, got, want)
			}
		case hclBlock:
			if blocks >= len(parsed.Blocks) {
				return fmt.Errorf("block %s not read back", it.name)
			}
			pb := parsed.Blocks[blocks]
			blocks++
			labels := make([]string, len(it.labels))
			for i, l := range it.labels {
				labels[i] = readBack(l)
			}
			if pb.Type != it.name || !slices.Equal(pb.Labels, labels) {
				return fmt.Errorf("block %s %q read back as %s %q", it.name, labels, pb.Type, pb.Labels)
			}
			if err := sameBody(it.body, pb.Body); err != nil {
				return fmt.Errorf("in block %s: %w", it.name, err)
			}
		}
	}
	if attrs != len(parsed.Attributes) || blocks != len(parsed.Blocks) {
		return fmt.Errorf("read back %d attributes and %d blocks, want %d and %d", len(parsed.Attributes), len(parsed.Blocks), attrs, blocks)
	}
	return nil
}

// TestWriterQuotesForKey: an object key "for" is quoted. Written bare, as hclwrite writes it,
// the object's first entry begins with the word for and HCL parses the object as a for
// expression: the export of a volume with a plugin parameter (or secret, context key,
// topology segment) named "for" failed as "a volctl bug".
func TestWriterQuotesForKey(t *testing.T) {
	v := spec.Volume{ID: "v", PluginID: "p", ExternalID: "e",
		Capabilities:    []spec.Capability{{AccessMode: spec.SingleNodeWriter, AttachmentMode: spec.FileSystem}},
		Parameters:      map[string]string{"for": "1", "in": "2"},
		Secrets:         spec.Secrets{"for": "3"},
		Context:         map[string]string{"for": "4", "null": "5"},
		TopologyRequest: &spec.TopologyRequest{Required: []spec.Topology{{Segments: map[string]string{"for": "r1"}}}},
	}
	b, _, err := VolumeFile(v, true)
	if err != nil {
		t.Fatal(err)
	}
	got, diags := spec.ParseVolume("volume-v.hcl", b, spec.VerbRegister)
	if diags.HasErrors() {
		t.Fatalf("the exported file does not parse back: %s\n%s", diags.Error(), b)
	}
	if !maps.Equal(got.Parameters, v.Parameters) || !maps.Equal(got.Secrets, v.Secrets) || !maps.Equal(got.Context, v.Context) ||
		!maps.Equal(got.TopologyRequest.Required[0].Segments, v.TopologyRequest.Required[0].Segments) {
		t.Errorf("read back as parameters %q, secrets %q, context %q, segments %q\n%s",
			got.Parameters, got.Secrets, got.Context, got.TopologyRequest.Required[0].Segments, b)
	}
}

// TestWriterQuotesBoolKeys: an object key "true" or "false" is quoted in a volume file. HCL1's
// scanner, which `nomad volume register` reads the file with, reads either word as a BOOL
// token, not a name, and a map key must be a name or a string ("expected: IDENT | STRING got:
// BOOL"); volctl's parser refuses the bare key for register as Nomad does. Written bare (both
// are names to spec.HCL1Name), the export of a volume with a plugin parameter or context key
// "true", which a spec takes quoted, refused itself as "a volctl bug".
func TestWriterQuotesBoolKeys(t *testing.T) {
	v := spec.Volume{ID: "v", PluginID: "p", ExternalID: "e",
		Capabilities: []spec.Capability{{AccessMode: spec.SingleNodeWriter, AttachmentMode: spec.FileSystem}},
		Parameters:   map[string]string{"true": "1", "false": "2", "True": "3"},
		Secrets:      spec.Secrets{"true": "4"},
		Context:      map[string]string{"false": "5"},
	}
	b, _, err := VolumeFile(v, true)
	if err != nil {
		t.Fatal(err)
	}
	var file map[string]any
	if err := hcl1.Decode(&file, string(b)); err != nil {
		t.Fatalf("HCL1 does not parse the exported volume file: %v\n%s", err, b)
	}
	got, diags := spec.ParseVolume("volume-v.hcl", b, spec.VerbRegister)
	if diags.HasErrors() {
		t.Fatalf("the exported file does not parse back: %s\n%s", diags.Error(), b)
	}
	if !maps.Equal(got.Parameters, v.Parameters) || !maps.Equal(got.Secrets, v.Secrets) || !maps.Equal(got.Context, v.Context) {
		t.Errorf("read back as parameters %q, secrets %q, context %q\n%s", got.Parameters, got.Secrets, got.Context, b)
	}
}
