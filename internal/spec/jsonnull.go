package spec

import (
	"bytes"
	"encoding/json"
	"fmt"

	"github.com/hashicorp/hcl/v2"
)

// nomadNulls refuses, in a JSON volume spec, the nulls and empty lists that HCL2's JSON reader
// takes for an argument or block left out and that Nomad does not: a null id, plugin_id or
// type, or capability mode (Nomad sends an empty ID or plugin ID, which its servers refuse,
// and refuses a null type; volctl read a volume with no ID as valid, and dropped a capability
// of a null mode without a word, leaving the volume none: TestJSONNullInARequiredFieldIsRefused),
// and a null or an empty list for the mount_options or topology_request block, a null
// mount_flags, required or preferred, or a null among required's or preferred's topologies,
// on which `nomad volume register` refuses the file ("cannot check HCL keys of type
// *ast.LiteralType", "unexpected token while parsing list: NULL":
// TestJSONNullBlockNomadRefusesIsRefused). A null elsewhere (a namespace, a parameter's value)
// both read as unset, and is left. A block may be written as its object or in a list
// (blockPath). A file encoding/json cannot read (its other errors are reported by the parser)
// is left to them; the caller gives the text with raw control characters escaped.
func nomadNulls(filename string, src []byte) hcl.Diagnostics {
	from := 0
	if bytes.HasPrefix(src, utf8BOM) {
		from = len(utf8BOM)
	}
	w := &nullWalk{filename: filename, src: src, from: from, dec: json.NewDecoder(bytes.NewReader(src[from:]))}
	w.value(nil)
	return w.diags
}

// nullWalk walks a JSON document's tokens, knowing where each value starts in src.
type nullWalk struct {
	filename string
	src      []byte
	from     int // where the decoder's input starts in src
	dec      *json.Decoder
	diags    hcl.Diagnostics
	failed   bool
}

// next is where the next value starts in src: past blanks, and the ":" or "," before it.
func (w *nullWalk) next() int {
	i := w.from + int(w.dec.InputOffset())
	for i < len(w.src) && bytes.IndexByte([]byte(" \t\r\n:,"), w.src[i]) >= 0 {
		i++
	}
	return i
}

// refuse reports the value at off (n bytes) as one Nomad does not read.
func (w *nullWalk) refuse(off, n int, format string, args ...any) {
	w.diags = append(w.diags, byteError(w.filename, w.src, off, n, "Value Nomad does not read",
		fmt.Sprintf(format, args...)+" A volume spec volctl reads is one `nomad volume register` reads.")...)
}

// value reads the value whose path (keys and "[]" for an element) is path, checking it.
func (w *nullWalk) value(path []string) {
	if w.failed {
		return
	}
	at := w.next()
	w.check(path, at)
	tok, err := w.dec.Token()
	if err != nil {
		w.failed = true
		return
	}
	d, ok := tok.(json.Delim)
	if !ok {
		return
	}
	for w.dec.More() && !w.failed {
		if d == '[' {
			w.value(append(path, "[]"))
			continue
		}
		key, err := w.dec.Token()
		if err != nil {
			w.failed = true
			return
		}
		k, _ := key.(string)
		w.value(append(path, k))
	}
	if _, err := w.dec.Token(); err != nil { // the closing delimiter
		w.failed = true
	}
}

// check refuses the value starting at src[at] where its path holds what Nomad does not read.
func (w *nullWalk) check(path []string, at int) {
	if at >= len(w.src) {
		return
	}
	null := bytes.HasPrefix(w.src[at:], []byte("null"))
	emptyList := w.src[at] == '[' && bytes.HasPrefix(bytes.TrimLeft(w.src[at+1:], " \t\r\n"), []byte("]"))
	switch p := pathOf(blockPath(path)); {
	case null && (p == "id" || p == "plugin_id" || p == "type"):
		w.refuse(at, 4, "%s is null, which a volume cannot be without: Nomad sends it empty (its servers refuse a volume with no ID or plugin ID; its CLI a null type). Give it a value.", p)
	case null && (p == "capability.access_mode" || p == "capability.attachment_mode"):
		w.refuse(at, 4, "%s is null: a capability needs both its modes. Give it a value.", path[len(path)-1])
	case (null || emptyList) && (p == "mount_options" || p == "topology_request"):
		n := 4
		if emptyList {
			n = bytes.IndexByte(w.src[at:], ']') + 1
		}
		w.refuse(at, n, "%s is written as %s, which Nomad's JSON reader refuses as a block (\"cannot check HCL keys\"). Leave it out, or write its object.", p, w.src[at:at+n])
	case null && (p == "mount_options.mount_flags" || p == "topology_request.required" || p == "topology_request.preferred"):
		w.refuse(at, 4, "%s is null, which Nomad's JSON reader refuses (\"unknown slice type\"). Leave it out, or write its list.", p)
	case null && (p == "topology_request.required.[]" || p == "topology_request.preferred.[]"):
		w.refuse(at, 4, "a null in %s, which Nomad's JSON reader refuses (\"unexpected token while parsing list: NULL\"). Leave it out.", path[len(path)-2])
	}
}

// blockPath is path without the list a block may be written in (`"capability": [{...}]`,
// `"mount_options": [{...}]`, `"topology_request": [{...}]`), which HCL1 reads as the object
// itself: a null in either form is the same null to Nomad
// (TestJSONNullInOtherFormsOfABlockIsRefused).
func blockPath(path []string) []string {
	out := make([]string, 0, len(path))
	for i, p := range path {
		if p == "[]" && i == 1 && (path[0] == "capability" || path[0] == "mount_options" || path[0] == "topology_request") {
			continue
		}
		out = append(out, p)
	}
	return out
}

// pathOf joins a value's path with dots.
func pathOf(path []string) string {
	var b bytes.Buffer
	for i, p := range path {
		if i > 0 {
			b.WriteByte('.')
		}
		b.WriteString(p)
	}
	return b.String()
}
