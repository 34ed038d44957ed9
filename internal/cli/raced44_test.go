package cli

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/volctl/volctl/internal/csi"
	"github.com/volctl/volctl/internal/csi/csitest"
	"github.com/volctl/volctl/internal/iostreams"
	"github.com/volctl/volctl/internal/spec"
)

// Two volctl processes create the same volume from the same spec at once: one sends
// CreateVolume, the other waits for the volume's lock and finds the volume made, and says so
// ("unchanged"). Before, the command read the volume before its create, outside the lock, and
// the one that waited said "created" too, of a volume it did not create (half the races of two
// `volume create` processes). Through the command, each with its own engine, as two
// processes; the second is known to wait by the progress line it draws on a terminal's stderr.
func TestTwoCreatesOfOneSpecAtOnceOneSaysUnchanged(t *testing.T) {
	h, faults, mem := newHeldCLIHarness(t)
	file := filepath.Join(t.TempDir(), "a.hcl")
	if err := os.WriteFile(file, []byte(strings.ReplaceAll(createSpec, "%s", "a")), 0o600); err != nil {
		t.Fatal(err)
	}
	gate := make(chan struct{})
	faults.Inject(csi.RPCCreateVolume, csitest.Fault{Gate: gate, Times: 1})
	first := make(chan commandResult, 1)
	go h.runCommand([]string{"volume", "create", file}, &signalWriter{seen: make(chan struct{})}, false, first)
	waitHeld(t, faults, 1, gate, "the first create's CreateVolume")
	b := h.commandWhileHeld(t, "a", gate, "volume", "create", file)
	a := <-first
	if a.code != 0 || !strings.HasPrefix(a.out, `Volume "a" created (external ID "`) {
		t.Errorf("the create that sent CreateVolume: exit %d, stdout %q, stderr %q; want exit 0 saying created", a.code, a.out, a.errOut)
	}
	if b.code != 0 || !strings.HasPrefix(b.out, `Volume "a" unchanged: it exists with this spec (external ID "`) {
		t.Errorf("the create that waited for it: exit %d, stdout %q, stderr %q; want exit 0 saying unchanged, not created", b.code, b.out, b.errOut)
	}
	if n := mem.CallCount(csi.RPCCreateVolume); n != 1 {
		t.Errorf("CreateVolume sent %d times, want once", n)
	}
}

// A create of a volume made before whose spec asks a larger capacity_min grows it, and says
// so; the same spec once more is unchanged (the engine's outcome, CreateVolumeOutcome).
func TestVolumeCreateAgainWithALargerMinimumSaysExpanded(t *testing.T) {
	h := newCLIHarness(t)
	sized := func(min string) map[string]string {
		src := strings.ReplaceAll(createSpec, "%s", "a")
		if min != "" {
			src += "capacity_min = \"" + min + "\"\n"
		}
		return map[string]string{"a.hcl": src}
	}
	var lines []string
	for _, files := range []map[string]string{sized("1GiB"), sized("2GiB"), sized("2GiB")} {
		ios, _, out, _ := iostreams.Test()
		o := &VolumeSubmitOptions{IO: ios, Engine: h.engine, ReadFile: specFiles(files), Verb: spec.VerbCreate, Files: []string{"a.hcl"}}
		if err := volumeSubmitRun(h.ctx, o); err != nil {
			t.Fatal(err)
		}
		lines = append(lines, strings.TrimSpace(out.String()))
	}
	for i, want := range []string{
		`Volume "a" created (external ID "vol-1", 1.0 GiB)`,
		`Volume "a" exists; expanded to the spec's capacity_min (external ID "vol-1", 2.0 GiB)`,
		`Volume "a" unchanged: it exists with this spec (external ID "vol-1", 2.0 GiB)`,
	} {
		if lines[i] != want {
			t.Errorf("create %d: %q, want %q", i+1, lines[i], want)
		}
	}
}

// `volume register` of a volume registered already says what it did, as a create again does:
// "updated" with what changed, "unchanged" for the same spec, and what else changed beside an
// expansion. Before, it said "registered" each time.
func TestVolumeRegisterAgainSaysWhatItDid(t *testing.T) {
	h := newCLIHarness(t)
	h.mem.AddVolume(csi.Volume{ID: "ext-1", CapacityBytes: 1 << 30})
	src := strings.ReplaceAll(createSpec, "%s", "r") + "external_id = \"ext-1\"\n"
	withSecret := src + "secrets {\n  token = \"r0tat3d-t0ken\"\n}\n"
	grownAndMounted := withSecret + "capacity_min = \"2GiB\"\nmount_options {\n  mount_flags = [\"noatime\"]\n}\n"
	var lines []string
	for _, files := range []string{src, src, withSecret, grownAndMounted} {
		ios, _, out, _ := iostreams.Test()
		o := &VolumeSubmitOptions{IO: ios, Engine: h.engine, ReadFile: specFiles(map[string]string{"r.hcl": files}), Verb: spec.VerbRegister, Files: []string{"r.hcl"}}
		if err := volumeSubmitRun(h.ctx, o); err != nil {
			t.Fatal(err)
		}
		lines = append(lines, strings.TrimSpace(out.String()))
	}
	for i, want := range []string{
		`Volume "r" registered`,
		`Volume "r" unchanged: it is registered with this spec`,
		`Volume "r" updated: secrets changed`,
		`Volume "r" updated: expanded to the spec's capacity_min (2.0 GiB); mount_options changed`,
	} {
		if lines[i] != want {
			t.Errorf("register %d: %q, want %q", i+1, lines[i], want)
		}
	}
}

// A command that waits for another volctl's `volume delete` of its volume finds the volume
// gone, and says another volctl deleted it meanwhile, with no advice to look in another state
// dir or at a near ID (it named the volume right, a moment before): a second `volume delete`,
// a `volume expand`, a `volume snapshot create`, a `volume deregister`, a `volume detach`.
// Before, each said `not found (did you mean "data1"?)`, then that volctl looked in the state
// dir and what another user made is elsewhere, as a claim that waited for a delete did before
// TestClaimThatWaitedForADeleteGetsNoAdviceToLookElsewhere.
func TestCommandsThatWaitedForADeleteSaySo(t *testing.T) {
	for name, args := range map[string][]string{
		"delete":          {"volume", "delete", "--yes", "data"},
		"expand":          {"volume", "expand", "data", "--size", "2GiB"},
		"snapshot create": {"volume", "snapshot", "create", "data", "s1"},
		"deregister":      {"volume", "deregister", "--yes", "data"},
		"detach":          {"volume", "detach", "--yes", "data"},
	} {
		t.Run(name, func(t *testing.T) {
			h, faults, _ := newHeldCLIHarness(t)
			h.createVolume(t, "data", spec.SingleNodeWriter)
			h.createVolume(t, "data1", spec.SingleNodeWriter) // a near ID, which "did you mean" named
			gate := make(chan struct{})
			faults.Inject(csi.RPCDeleteVolume, csitest.Fault{Gate: gate, Times: 1})
			deleted := make(chan error, 1)
			go func() { deleted <- h.e.DeleteVolume(context.Background(), "data") }()
			waitHeld(t, faults, 1, gate, "the delete's DeleteVolume")
			r := h.commandWhileHeld(t, "data", gate, args...)
			if err := <-deleted; err != nil {
				t.Fatalf("the delete: %v", err)
			}
			if r.code != ExitError || !strings.Contains(r.errOut, `volume "data" was deleted by another volctl meanwhile`) {
				t.Fatalf("%s that waited for the delete: exit %d, stderr:\n%s\nwant exit %d saying the volume was deleted meanwhile", name, r.code, r.errOut, ExitError)
			}
			if strings.Contains(r.errOut, "did you mean") || strings.Contains(r.errOut, "volctl looked in state dir") {
				t.Errorf("%s that waited for the delete: stderr:\n%s\nwant no near ID and no advice to look elsewhere: the volume was there, and was deleted meanwhile", name, r.errOut)
			}
		})
	}
}

// Two `volume expand` processes to one size at once: the one that waited for the other's
// ControllerExpandVolume finds the volume at that size, sends nothing, and says it is already
// that size. Before, the command compared the volume after the expand with one read before it,
// outside the lock, and the one that waited said "expanded" too, of an expansion it did not
// make.
func TestTwoExpandsToOneSizeAtOnceOneSaysAlready(t *testing.T) {
	h, faults, mem := newHeldCLIHarness(t)
	h.createVolume(t, "data", spec.SingleNodeWriter)
	gate := make(chan struct{})
	faults.Inject(csi.RPCControllerExpandVolume, csitest.Fault{Gate: gate, Times: 1})
	args := []string{"volume", "expand", "data", "--size", "4GiB"}
	first := make(chan commandResult, 1)
	go h.runCommand(args, &signalWriter{seen: make(chan struct{})}, false, first)
	waitHeld(t, faults, 1, gate, "the first expand's ControllerExpandVolume")
	b := h.commandWhileHeld(t, "data", gate, args...)
	a := <-first
	if a.code != 0 || !strings.HasPrefix(a.out, `Volume "data" expanded to 4.0 GiB`) {
		t.Errorf("the expand that sent ControllerExpandVolume: exit %d, stdout %q, stderr %q; want exit 0 saying expanded", a.code, a.out, a.errOut)
	}
	if b.code != 0 || !strings.HasPrefix(b.out, `Volume "data" is already 4.0 GiB`) {
		t.Errorf("the expand that waited for it: exit %d, stdout %q, stderr %q; want exit 0 saying it is already 4.0 GiB", b.code, b.out, b.errOut)
	}
	if n := mem.CallCount(csi.RPCControllerExpandVolume); n != 1 {
		t.Errorf("ControllerExpandVolume sent %d times, want once", n)
	}
}
