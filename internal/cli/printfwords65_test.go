package cli

import (
	"bytes"
	"context"
	"strconv"
	"strings"
	"testing"
)

// TestTemplatePrintfErrorTextIsCountedInItsBound (found by helper review65): printfSize counts the format
// once and each argument at textGrowth (6) bytes a byte, but fmt writes its own error text for
// a verb it cannot fill: "%!d(MISSING)" (12 bytes) for each 2-byte "%d" with no argument left,
// "%!d(string=)" (12 bytes) for an empty string, which in a list costs the count one byte (its
// separator). A format the template doubles with print to just under the bound (each doubling
// counted exactly) then makes six times the bound in one printf, held in memory, before any write can
// stop it: the promise that every function making text is refused "before it runs, by what it
// could make of its arguments" does not hold.
func TestTemplatePrintfErrorTextIsCountedInItsBound(t *testing.T) {
	untimedFilters(t)
	for _, c := range []struct {
		name  string
		bound int64
		text  string
		data  any
	}{
		// "%d" doubled 18 times by print (counted exactly): 512 KiB of format, counted as 512 KiB;
		// printf of it alone makes 3 MiB.
		{"missing arguments", 1 << 20, `{{$f := "%d"}}{{range 18}}{{$f = print $f $f}}{{end}}{{$y := printf $f}}{{len $y}}`, exportSample},
		// 200,000 empty strings: counted 6 x 200 KB = 1.2 MB, made 13 x 200 KB = 2.6 MB.
		{"bad verb over a list", 2 << 20, `{{$y := printf "%d" .}}{{len $y}}`, make([]string, 200_000)},
	} {
		t.Run(c.name, func(t *testing.T) {
			lowerFilterOutput(t, c.bound)
			tm, err := parseTemplate(c.text)
			if err != nil {
				t.Fatal(err)
			}
			e := exportFlags{Template: c.text, tmpl: tm}
			var out bytes.Buffer
			err = e.Write(context.Background(), &out, c.data)
			if err == nil {
				made, _ := strconv.Atoi(strings.TrimSpace(out.String()))
				t.Errorf("-t %s with a %d-byte bound: printf made a %d-byte string (%.1fx the bound) and was not refused", c.text, c.bound, made, float64(made)/float64(c.bound))
			} else if !isTemplateBound(err) && !strings.Contains(err.Error(), "it would make more than") {
				t.Errorf("err %v; want printf refused by the text bound", err)
			}
		})
	}
}
