package cli

import (
	"bytes"
	"context"
	"strings"
	"testing"
	"time"

	"github.com/volctl/volctl/internal/csi"
	"github.com/volctl/volctl/internal/csi/csitest"
	"github.com/volctl/volctl/internal/iostreams"
	"github.com/volctl/volctl/internal/spec"
)

// A `group run --json` that fails before it runs any alloc (here: interrupted while another
// run of the same group holds the group's lock, as `timeout 30 volctl group run --json` beside
// a slow run is) gets engine.RunGroup's zero GroupInfo back with its error, and printed it:
// stdout held {"name": "", "state": "", "count": 0, "allocs": null}, a group with no name and
// a null allocs array docs/json.md says is never null, beside exit 1. docs/json.md: "A command
// that fails prints no JSON, neither half an object nor an error object: stdout stays empty".
// Found by helper review65.
func TestGroupRunFailingBeforeAnyAllocPrintsNoJSON(t *testing.T) {
	requireMount(t)
	faults := csitest.NewFaults()
	h := newCLIHarnessServing(t, csitest.WithFaults(faults))
	h.createVolume(t, "data", spec.MultiNodeMultiWriter)
	t.Cleanup(func() { h.e.StopGroup(context.Background(), "web") })
	src := []byte(`group "web" {
  volume "d" {
    type            = "csi"
    source          = "data"
    access_mode     = "multi-node-multi-writer"
    attachment_mode = "file-system"
  }
}
`)
	read := func(string) ([]byte, error) { return src, nil }
	gate := make(chan struct{})
	faults.Inject(csi.RPCNodePublishVolume, csitest.Fault{Gate: gate, Times: 1})
	first := make(chan error, 1)
	go func() {
		ios, _, _, _ := iostreams.Test()
		first <- groupRunRun(h.ctx, &GroupRunOptions{IO: ios, Engine: h.engine, File: "web.hcl", ReadFile: read})
	}()
	defer func() { close(gate); <-first }()
	deadline := time.Now().Add(10 * time.Second)
	for faults.Held() < 1 {
		if time.Now().After(deadline) {
			t.Fatal("the first run's publish never reached the plugin")
		}
		time.Sleep(time.Millisecond)
	}
	// The second run waits for the group's lock; its interrupt comes while it waits.
	ctx, cancel := context.WithTimeout(h.ctx, 700*time.Millisecond)
	defer cancel()
	ios, _, out, _ := iostreams.Test()
	err := groupRunRun(ctx, &GroupRunOptions{IO: ios, Engine: h.engine, File: "web.hcl", ReadFile: read,
		Exporter: exportFlags{JSON: true}})
	if err == nil {
		t.Fatal("second group run, interrupted while the first holds the group: no error")
	}
	if out.Len() != 0 {
		t.Errorf("group run --json failed (%v), exit %d, and printed to stdout:\n%s\nwant nothing: a command that fails prints no JSON (docs/json.md)",
			err, ExitCode(err), strings.TrimSpace(out.String()))
	}
}

// printf's bound (templatebound.go, printfSize) counts a width once per verb, but fmt pads
// every element of a list or map with it: `printf "%999999v" .` over a list of N objects makes
// about a megabyte per key and per value, N times, in one Sprintf the heap's watcher cannot
// stop. docs/json.md and architecture.md promise that a template function that could make
// more than the output bound "refuses arguments it could make more than 64 MiB of before it
// makes any": over the event log's 10,000 events this one makes some 140 GB at once. Here,
// the bound lowered to 1 MiB, as TestExportTemplateMemoryIsBounded lowers it, the printf is
// estimated at under 1 MiB and makes 12 MB. Found by helper review65.
func TestTemplatePrintfWidthOverAListIsBounded(t *testing.T) {
	untimedFilters(t)
	lowerFilterOutput(t, 1<<20)
	text := `{{$x := printf "%999999v" .}}{{len $x}}`
	tm, err := parseTemplate(text)
	if err != nil {
		t.Fatal(err)
	}
	e := exportFlags{Template: text, tmpl: tm}
	var out bytes.Buffer
	err = e.Write(context.Background(), &out, exportSample)
	if err == nil || ExitCode(err) != ExitUsage || !strings.Contains(err.Error(), "1 MiB") {
		t.Errorf("-t %s with a 1 MiB bound: err %v (exit %d), printed %q; want printf refused before it makes more than the bound",
			text, err, ExitCode(err), out.String())
	}
}
