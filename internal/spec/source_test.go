package spec

import (
	"fmt"
	"os"
	"path/filepath"
	"runtime"
	"strings"
	"testing"
)

// TestOneLexPerParse: a spec file is lexed once and masked once, however many passes read its
// tokens (the nesting check of non-ASCII code, the HCL1 rewrite, the mask) and however many
// diagnostics quote what the mask hides or show a snippet. Each pass lexed it anew (Nomad's
// template three times, its parse 1.03-1.09 ms against 0.76-0.82), and each number HCL1
// refuses masked the whole file again: 4,000 of them, a 55 KB file, took 2m23s to parse.
func TestOneLexPerParse(t *testing.T) {
	template, err := os.ReadFile(filepath.Join(nomadCorpus(t), "command__asset__volume.csi.hcl"))
	if err != nil {
		t.Fatal(err)
	}
	var numbers strings.Builder
	numbers.WriteString("id = \"a\"\nparameters {\n")
	for i := range 2000 {
		fmt.Fprintf(&numbers, "  k%d = 1_0\n", i)
	}
	numbers.WriteString("}\nsecrets { \"k\" = 0b1 }\n")
	for _, c := range []struct {
		name, src string
		diags     int // at least
	}{
		{"Nomad's template (HCL1, a warning)", string(template), 1},
		{"non-ASCII code (the nesting check's tokens), HCL1, a secret quoted", "id = \"a\"\ndonnées = 1\nsecrets { \"k\" = \"%{hunter2}\" }\n", 1},
		{"numbers HCL1 refuses", numbers.String(), 2001},
	} {
		t.Run(c.name, func(t *testing.T) {
			p := NewParser()
			_, diags := p.ParseVolume("v.hcl", []byte(c.src), VerbAny)
			if len(diags) < c.diags {
				t.Fatalf("%d diagnostics, want at least %d:\n%s", len(diags), c.diags, renderPlain(p, diags))
			}
			out := renderPlain(p, diags)
			if strings.Contains(out, "hunter2") {
				t.Errorf("a secret is shown:\n%s", out)
			}
			s := p.sources["v.hcl"]
			if s.lexes != 1 || s.maskings != 1 {
				t.Errorf("the file was lexed %d times and masked %d times for its parse and %d diagnostics, want once each", s.lexes, s.maskings, len(diags))
			}
		})
	}
}

// TestRefusedNumbersCostLinearMemory: a file of numbers HCL1 refuses costs memory in
// proportion to its size, not to its size times the numbers in it (each masked the whole file
// again: 2,000 of them allocated gigabytes). Memory, not time, so the machine's load does not
// matter.
func TestRefusedNumbersCostLinearMemory(t *testing.T) {
	alloc := func(n int) uint64 {
		var b strings.Builder
		b.WriteString("id = \"a\"\nparameters {\n")
		for i := range n {
			fmt.Fprintf(&b, "  k%d = 1_0\n", i)
		}
		b.WriteString("}\n")
		src := []byte(b.String())
		var before, after runtime.MemStats
		runtime.ReadMemStats(&before)
		if _, diags := ParseVolume("v.hcl", src, VerbAny); len(diags) != n {
			t.Fatalf("%d diagnostics for %d numbers HCL1 refuses", len(diags), n)
		}
		runtime.ReadMemStats(&after)
		return after.TotalAlloc - before.TotalAlloc
	}
	small, large := alloc(500), alloc(2000)
	t.Logf("500 numbers: %d bytes; 2000: %d", small, large)
	if large > 8*small {
		t.Errorf("4 times the numbers HCL1 refuses allocated %d times the memory (%d against %d bytes), want about 4", large/small, large, small)
	}
}
