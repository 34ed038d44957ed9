package cli

import (
	"context"
	"regexp"
	"strings"
	"testing"

	csipb "github.com/container-storage-interface/spec/lib/go/csi"
	"google.golang.org/grpc"

	"github.com/volctl/volctl/internal/csi/csitest"
	"github.com/volctl/volctl/internal/iostreams"
	"github.com/volctl/volctl/internal/spec"
)

// TestInterruptedMultiVolumeCreateNamesTheVolumesNotTried: `volctl create a.hcl b.hcl c.hcl`
// interrupted while b's CreateVolume is in flight stops the loop (volumeSubmitRun breaks on
// ctx.Err()), so c is never created; yet the command's summary says "1 of 3 volumes failed
// (see above)", which reads as two of three made, and nothing anywhere names c. The user
// believes c exists. Correct behaviour: the summary counts and names the volumes not tried
// (c: "not created"), so that no volume of the files is left unsaid. Found by helper review75.
func TestInterruptedMultiVolumeCreateNamesTheVolumesNotTried(t *testing.T) {
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	interrupt := func(rctx context.Context, req any, info *grpc.UnaryServerInfo, handler grpc.UnaryHandler) (any, error) {
		if r, ok := req.(*csipb.CreateVolumeRequest); ok && strings.HasPrefix(r.GetName(), "volctl-b-") {
			cancel() // the user's Ctrl-C while b's CreateVolume is in flight
			<-rctx.Done()
			return nil, rctx.Err()
		}
		return handler(rctx, req)
	}
	mem := csitest.NewMemPlugin(csitest.DefaultMemConfig())
	_, e, eng := serveMem(t, mem, csitest.WithInterceptor(interrupt))
	files := map[string]string{
		"a.hcl": strings.NewReplacer("%s", "a").Replace(createSpec),
		"b.hcl": strings.NewReplacer("%s", "b").Replace(createSpec),
		"c.hcl": strings.NewReplacer("%s", "c").Replace(createSpec),
	}
	ios, _, out, errOut := iostreams.Test()
	o := &VolumeSubmitOptions{IO: ios, Engine: eng, ReadFile: specFiles(files), Verb: spec.VerbCreate,
		Files: []string{"a.hcl", "b.hcl", "c.hcl"}}
	err := volumeSubmitRun(ctx, o)
	if err == nil {
		t.Fatalf("interrupted create of three volumes exited 0; stdout %q", out)
	}
	if !strings.Contains(out.String(), `Volume "a" created`) {
		t.Fatalf("precondition: a was not created before the interrupt; stdout %q stderr %q err %v", out, errOut, err)
	}
	if _, verr := e.Volume(context.Background(), "c"); verr == nil {
		t.Fatalf("precondition: volume c was created despite the interrupt")
	}
	said := errOut.String() + "\n" + err.Error()
	if !strings.Contains(said, `"c"`) {
		t.Errorf("volume c was never created, and nothing says so: stdout %q\nstderr %q\nerror %q", out, errOut, err)
	}
	if strings.Contains(err.Error(), "1 of 3 volumes failed") {
		t.Errorf("summary %q counts only b as not done, where b and c were not created", err)
	}
}

// TestCreateAgainWithACapacityMaxBelowTheVolumeIsRefused: volume "a" is created (the plugin
// makes it 1 GiB), then `volctl create` runs again on its spec with capacity_max = "100MiB"
// added. Found ready, neither checkImmutable nor notChangedByCreate looked at capacity_max: the
// command exited 0 saying `Volume "a" unchanged: it exists with this spec` of a 1 GiB volume
// whose spec allows 100 MiB at most, and recorded no capacity_max (Nomad refuses the same: "max
// requested capacity ... less than current capacity"). It is refused (exit 4), naming
// capacity_max and both sizes; a capacity_max at the volume's size, which a create does not
// record either, is refused pointing to the registration again that does, and that
// registration, run as advised, records it. Found by helper review75.
func TestCreateAgainWithACapacityMaxBelowTheVolumeIsRefused(t *testing.T) {
	h := newCLIHarness(t)
	first := strings.NewReplacer("%s", "a").Replace(createSpec)
	run := func(verb spec.Verb, text string) (string, error) {
		ios, _, out, _ := iostreams.Test()
		o := &VolumeSubmitOptions{IO: ios, Engine: h.engine, ReadFile: specFiles(map[string]string{"a.hcl": text}),
			Verb: verb, Files: []string{"a.hcl"}}
		err := volumeSubmitRun(h.ctx, o)
		return out.String(), err
	}
	if out, err := run(spec.VerbCreate, first); err != nil || !strings.Contains(out, "1.0 GiB") {
		t.Fatalf("precondition: first create: %v; stdout %q (want a 1 GiB volume)", err, out)
	}
	out, err := run(spec.VerbCreate, first+"capacity_max = \"100MiB\"\n")
	if err == nil || ExitCode(err) != 4 {
		t.Fatalf("create again with capacity_max 100MiB of a 1 GiB volume: exit %d, %v, stdout %q; want refused, exit 4", ExitCode(err), err, out)
	}
	for _, want := range []string{"capacity_max", "100MiB", "is 1GiB", "does not shrink", "leave capacity_max out and create it again"} {
		if !strings.Contains(err.Error(), want) {
			t.Errorf("refusal %q does not say %q", err, want)
		}
	}
	// As advised, capacity_max left out: the create again is the volume as it is.
	if out, err := run(spec.VerbCreate, first); err != nil || !strings.Contains(out, "unchanged") {
		t.Fatalf("the advised create again with capacity_max left out: %v; stdout %q", err, out)
	}
	// As advised, a capacity_max of at least the volume's size: a create does not record it
	// either, and says what does.
	out, err = run(spec.VerbCreate, first+"capacity_max = \"1GiB\"\n")
	if err == nil || ExitCode(err) != 4 || !strings.Contains(err.Error(), "does not change its capacity_max") {
		t.Fatalf("create again with capacity_max 1GiB: exit %d, %v, stdout %q; want refused, naming capacity_max as what a create does not change", ExitCode(err), err, out)
	}
	v, verr := h.e.Volume(h.ctx, "a")
	if verr != nil || v.RequestedMax != 0 {
		t.Fatalf("after the refusals, volume a: %+v, %v; want no capacity_max recorded", v, verr)
	}
	m := regexp.MustCompile("external_id = (\"[^\"]*\") added").FindStringSubmatch(err.Error())
	if m == nil || !strings.Contains(err.Error(), "`volctl volume register`") {
		t.Fatalf("refusal names no registration with the external ID: %v", err)
	}
	if _, err := run(spec.VerbRegister, first+"capacity_max = \"1GiB\"\nexternal_id = "+m[1]+"\n"); err != nil {
		t.Fatalf("the advised registration: %v", err)
	}
	if v, err := h.e.Volume(h.ctx, "a"); err != nil || v.RequestedMax != 1<<30 {
		t.Fatalf("after the advised registration, volume a: capacity_max %d, %v; want 1 GiB recorded", v.RequestedMax, err)
	}
}
