package agent

import (
	"fmt"
	"sort"
	"time"

	"github.com/hashicorp/hcl/v2"
	"github.com/hashicorp/hcl/v2/hclsyntax"
	"github.com/zclconf/go-cty/cty"

	"github.com/volctl/volctl/internal/spec"
)

// File is an agent config file: an optional agent block of settings and any number of plugin
// blocks (the plugin spec format) to register at start.
//
//	agent {
//	  probe_interval       = "5s"
//	  probe_interval_ready = "30s"
//	  health_timeout       = "30s"
//	  gc_interval          = "1m"
//	  reconcile_interval   = "1m"
//	  stop_timeout         = "10s"
//	}
//	plugin "hostpath" { type = "monolith" socket = "/run/volctl/hostpath.sock" exec { ... } }
type File struct {
	Settings Settings
	Plugins  []spec.Plugin
}

// fileSettings are the settings a config file may give; the restart backoff is left to the
// defaults (tests set it through Config).
var fileSettings = []string{"probe_interval", "probe_interval_ready", "health_timeout", "gc_interval", "reconcile_interval", "stop_timeout"}

var configSchema = &hcl.BodySchema{
	Blocks: []hcl.BlockHeaderSchema{{Type: "agent"}, {Type: "plugin", LabelNames: []string{"id"}}},
}

// ParseConfig parses and validates an agent config file (HCL). It returns every problem at
// once as diagnostics with source ranges, and the file (for rendering them with
// spec.NewDiagnosticWriter); the File is nil when any diagnostic is an error.
func ParseConfig(filename string, src []byte) (*File, map[string]*hcl.File, hcl.Diagnostics) {
	files := map[string]*hcl.File{filename: {Bytes: src}}
	// HCL's parser recurses on every level of nesting: a file too deep for it is refused
	// first, as spec files are.
	if diags := spec.CheckNesting(filename, src); diags.HasErrors() {
		return nil, files, diags
	}
	f, diags := hclsyntax.ParseConfig(src, filename, hcl.InitialPos)
	if diags.HasErrors() {
		return nil, files, diags
	}
	content, d := f.Body.Content(configSchema)
	diags = append(diags, d...)
	out := &File{}
	var agentBlocks, pluginBlocks []*hcl.Block
	for _, b := range content.Blocks {
		switch b.Type {
		case "agent":
			if len(agentBlocks) > 0 {
				diags = append(diags, &hcl.Diagnostic{Severity: hcl.DiagError, Summary: "Duplicate agent block",
					Detail: fmt.Sprintf("The agent block is already given at %s; merge the two.", agentBlocks[0].DefRange), Subject: b.DefRange.Ptr()})
			}
			agentBlocks = append(agentBlocks, b)
			s, d := decodeSettings(b)
			diags = append(diags, d...)
			out.Settings = out.Settings.Merge(s)
		case "plugin":
			pluginBlocks = append(pluginBlocks, b)
		}
	}
	if len(pluginBlocks) > 0 {
		// The plugin blocks are plugin specs: let internal/spec decode and validate them, from the
		// same source with everything else blanked out (it is checked above), so that every line
		// and column it reports is the file's own.
		plugins, d := spec.ParsePlugins(filename, only(src, pluginBlocks))
		diags = append(diags, d...)
		for _, p := range plugins {
			out.Plugins = append(out.Plugins, *p)
		}
	}
	sort.SliceStable(diags, func(i, j int) bool {
		a, b := diags[i].Subject, diags[j].Subject
		return a != nil && b != nil && a.Start.Byte < b.Start.Byte
	})
	if diags.HasErrors() {
		return nil, files, diags
	}
	return out, files, diags
}

// decodeSettings reads an agent block's durations.
func decodeSettings(b *hcl.Block) (Settings, hcl.Diagnostics) {
	schema := &hcl.BodySchema{}
	for _, name := range fileSettings {
		schema.Attributes = append(schema.Attributes, hcl.AttributeSchema{Name: name})
	}
	content, diags := b.Body.Content(schema)
	var s Settings
	for _, f := range s.fields() {
		attr := content.Attributes[f.name]
		if attr == nil {
			continue
		}
		v, d := attr.Expr.Value(nil)
		diags = append(diags, d...)
		if d.HasErrors() {
			continue
		}
		bad := func(detail string) {
			diags = append(diags, &hcl.Diagnostic{Severity: hcl.DiagError, Summary: "Invalid duration",
				Detail: detail, Subject: attr.Expr.Range().Ptr()})
		}
		if v.IsNull() || !v.IsKnown() || v.Type() != cty.String {
			bad(fmt.Sprintf("%s must be a duration string, like \"5s\" or \"1m\".", f.name))
			continue
		}
		d2, err := time.ParseDuration(v.AsString())
		switch {
		case err != nil:
			bad(fmt.Sprintf("%q is not a duration; write %s like \"5s\" or \"1m\".", v.AsString(), f.name))
		case d2 <= 0:
			bad(fmt.Sprintf("%s must be more than zero.", f.name))
		default:
			*f.d = d2
		}
	}
	return s, diags
}

// only returns src with everything but the blocks replaced by spaces, newlines kept, so that
// positions inside the blocks do not move.
func only(src []byte, blocks []*hcl.Block) []byte {
	out := make([]byte, len(src))
	for i, c := range src {
		out[i] = ' '
		if c == '\n' {
			out[i] = '\n'
		}
	}
	for _, b := range blocks {
		start, end := b.TypeRange.Start.Byte, b.DefRange.End.Byte
		if body, ok := b.Body.(*hclsyntax.Body); ok {
			end = body.SrcRange.End.Byte
		}
		copy(out[start:end], src[start:end])
	}
	return out
}
