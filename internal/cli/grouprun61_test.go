package cli

import (
	"context"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/volctl/volctl/internal/csi"
	"github.com/volctl/volctl/internal/csi/csitest"
	"github.com/volctl/volctl/internal/iostreams"
	"github.com/volctl/volctl/internal/spec"
)

// A group run of an edited spec (a volume block added) whose new claim is refused (another
// alloc holds the single-node-writer volume) leaves api[0] holding the earlier run's claim and
// lacking the new volume; the run says why, exit 4, and records the refusal. group status says
// that refusal on the missing volume's row, and --json as the alloc's error. Before, a recorded
// run error was shown only on an alloc that held nothing (engine.groupInfo): the row read
// "missing (a run cut short: `volctl group run` again)", and a run again, as advised, was
// refused the same way. Found by helper review61.
func TestGroupStatusSaysWhyTheLastRunLeftAVolumeMissing(t *testing.T) {
	requireMount(t)
	h := newCLIHarness(t)
	h.createVolume(t, "data", spec.MultiNodeMultiWriter)
	h.createVolume(t, "logs", spec.SingleNodeWriter)
	g := apiGroup(t, "data")
	if _, err := h.e.RunGroup(h.ctx, g); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { h.e.StopGroup(context.Background(), "api") })
	h.claim(t, "logs", "other")
	t.Cleanup(func() { h.e.Release(context.Background(), "logs", "other") })
	g.Volumes = append(g.Volumes, spec.VolumeRequest{Name: "d1", Type: "csi", Source: "logs",
		AccessMode: spec.SingleNodeWriter, AttachmentMode: spec.FileSystem})
	for range 2 { // the run, and the run again that status advises
		if _, err := h.e.RunGroup(h.ctx, g); err == nil || !strings.Contains(err.Error(), `alloc "other"`) {
			t.Fatalf("run with logs held by alloc other = %v; want it refused naming the holder", err)
		}
	}
	code, out, errOut := h.runReported("group", "status", "api")
	if code != 0 {
		t.Fatalf("group status: exit %d, %s", code, errOut)
	}
	if strings.Contains(out, "a run cut short") || !regexp.MustCompile(`(?m)^api\[0\] +logs +<none> +missing: .*alloc "other"`).MatchString(out) {
		t.Errorf("group status after two runs refused logs (held by alloc \"other\") blames a run cut short and says nothing of the refusal:\n%s", out)
	}
	h.runMatches(t, []string{"group", "status", "api", "--json"}, `"missing": \[\s*"logs"\s*\]`, `"error": ".*alloc \\"other\\"`)
}

// A group run interrupted (Ctrl-C) part way returns only the allocs it got to (engine.RunGroup
// returns info as built so far); its first line counts the group's allocs and says how many
// were not run. Before, a run of count 3 interrupted at its second alloc printed "1 of 2 allocs
// have their volumes", as if the group had two allocs (the third, never run, was named only in
// the error on stderr). Found by helper review61.
func TestInterruptedGroupRunCountsTheAllocsOfTheGroup(t *testing.T) {
	requireMount(t)
	faults := csitest.NewFaults()
	h := newCLIHarnessServing(t, csitest.WithFaults(faults))
	h.createVolume(t, "data", spec.MultiNodeMultiWriter)
	t.Cleanup(func() { h.e.StopGroup(context.Background(), "web") })
	src := []byte(`group "web" {
  count = 3
  volume "d" {
    type            = "csi"
    source          = "data"
    access_mode     = "multi-node-multi-writer"
    attachment_mode = "file-system"
  }
}
`)
	gate := make(chan struct{})
	// Opened only after the run returned: opened at once, web[1]'s publish could finish first.
	defer close(gate)
	faults.Inject(csi.RPCNodePublishVolume, csitest.Fault{Times: 1}) // web[0] is served
	faults.Inject(csi.RPCNodePublishVolume, csitest.Fault{Gate: gate, Times: 1})
	ctx, cancel := context.WithCancel(h.ctx)
	defer cancel()
	ios, _, out, _ := iostreams.Test()
	done := make(chan error, 1)
	go func() {
		done <- groupRunRun(ctx, &GroupRunOptions{IO: ios, Engine: h.engine, File: "web.hcl",
			ReadFile: func(string) ([]byte, error) { return src, nil }})
	}()
	deadline := time.Now().Add(10 * time.Second)
	for faults.Held() < 1 {
		if time.Now().After(deadline) {
			t.Fatal("web[1]'s publish never reached the plugin")
		}
		time.Sleep(time.Millisecond)
	}
	cancel()
	err := <-done
	if err == nil || !strings.Contains(err.Error(), "web[2]") {
		t.Fatalf("interrupted group run = %v; want the interrupt, naming web[2] not run", err)
	}
	first, _, _ := strings.Cut(out.String(), "\n")
	if !strings.Contains(first, "1 of 3 allocs have their volumes") || !strings.HasSuffix(first, "; 1 not run") {
		t.Errorf("interrupted run of a group of count 3 prints %q; want its allocs counted of 3 (error: %v)", first, err)
	}
}
