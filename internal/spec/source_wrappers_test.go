package spec

import "github.com/hashicorp/hcl/v2"

// The tests' ways into one step of a parse, each over a source of its own (the parse shares one
// source between them).

// rewriteHCL1 is the HCL1 rewrite of src (source.rewriteHCL1) without its number errors.
func rewriteHCL1(src []byte, filename string) (out []byte, m *offsetMap, ok bool) {
	out, m, ok, _ = newSource(filename, src, false).rewriteHCL1()
	return out, m, ok
}

// checkNesting is the nesting check of src (source.checkNesting).
func checkNesting(filename string, src []byte, json bool) hcl.Diagnostics {
	return newSource(filename, src, json).checkNesting()
}

// scanNesting scans src and stops where a limit is first passed (scanSource).
func scanNesting(src []byte, json bool, limitDepth, limitOps int) *nestScan {
	return scanSource(newSource("", src, json), limitDepth, limitOps)
}
