package cli

import (
	"context"
	"fmt"
	csipb "github.com/container-storage-interface/spec/lib/go/csi"
	"github.com/volctl/volctl/internal/csi"
	"github.com/volctl/volctl/internal/csi/csitest"
	"github.com/volctl/volctl/internal/engine"
	"github.com/volctl/volctl/internal/spec"
	"google.golang.org/grpc"
	"google.golang.org/protobuf/proto"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/volctl/volctl/internal/iostreams/ptytest"
)

// TestNamedTerminalIsNotWarnedAsAFileOthersRead: `--secret-file token=/dev/tty` reads the secret
// typed at the terminal, echo off; then it warned that /dev/tty (mode 0666, as on every Linux)
// "may be read by users other than its owner: the secret is theirs too" and advised `chmod 600
// /dev/tty`: a device, not a file holding the secret, whose chmod fails for a user and, by root,
// breaks /dev/tty for every other user. Run in a child with the pseudo-terminal as its
// controlling terminal, for /dev/tty to name it. Found by helper review71 (own review).
func TestNamedTerminalIsNotWarnedAsAFileOthersRead(t *testing.T) {
	if os.Getenv("VOLCTL_TEST_DEVTTY_CHILD") == "1" {
		var errOut lockedBuffer
		got, err := (&secretFlags{Files: []string{"token=/dev/tty"}}).parse(t.Context(), strings.NewReader(""), &errOut)
		fmt.Fprintf(os.Stdout, "\nRESULT err=%v value=%q\nSTDERR<<%s>>\n", err, got["token"], errOut.String())
		return
	}
	controller, tty, err := ptytest.Open(80, 24)
	if err != nil {
		t.Skipf("no pseudo-terminal to type at: %v", err)
	}
	defer controller.Close()
	defer tty.Close()
	var out lockedBuffer
	cmd := exec.Command(os.Args[0], "-test.run=^TestNamedTerminalIsNotWarnedAsAFileOthersRead$", "-test.count=1")
	cmd.Env = append(os.Environ(), "VOLCTL_TEST_DEVTTY_CHILD=1")
	cmd.Stdin, cmd.Stdout, cmd.Stderr = tty, &out, &out
	cmd.SysProcAttr = &syscall.SysProcAttr{Setsid: true, Setctty: true, Ctty: 0}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	for deadline := time.Now().Add(10 * time.Second); ; time.Sleep(10 * time.Millisecond) {
		if echoOff := !echoOn(t, tty); echoOff {
			break
		}
		if time.Now().After(deadline) {
			cmd.Process.Kill()
			cmd.Wait()
			t.Fatalf("the child never turned the echo off: %s", out.String())
		}
	}
	if _, err := controller.Write([]byte("s3cret-typed\n")); err != nil {
		t.Fatal(err)
	}
	go readAvailable(controller)
	waited := make(chan error, 1)
	go func() { waited <- cmd.Wait() }()
	select {
	case <-waited:
	case <-time.After(20 * time.Second):
		cmd.Process.Kill()
		<-waited
		t.Fatalf("child still running 20 s after a line was typed: %s", out.String())
	}
	s := out.String()
	if !strings.Contains(s, `value="s3cret-typed"`) {
		t.Fatalf("--secret-file token=/dev/tty did not read the line typed: %s", s)
	}
	if strings.Contains(s, "may be read by users other than its owner") || strings.Contains(s, "chmod 600") {
		i := strings.Index(s, "STDERR<<")
		t.Errorf("--secret-file token=/dev/tty (the secret typed there, echo off): stderr %s: it warns of the terminal device as of a file holding the secret, and advises a chmod of /dev/tty", s[i:])
	}
}

// TestSecretTypedLongerThanTheTerminalLineIsRefused: the terminal is read in canonical mode
// (term.ReadPassword keeps ICANON), whose line holds 4095 bytes: a longer secret pasted at the
// prompt was cut short by the kernel, silently, and the cut value sent as the secret. Refused
// now, naming a file as the way. Found by helper review71 (own review).
func TestSecretTypedLongerThanTheTerminalLineIsRefused(t *testing.T) {
	controller, tty, err := ptytest.Open(80, 24)
	if err != nil {
		t.Skipf("no pseudo-terminal to type at: %v", err)
	}
	defer controller.Close()
	defer tty.Close()
	var errOut lockedBuffer
	sf := secretFlags{Files: []string{"token=-"}}
	type result struct {
		s   map[string]string
		err error
	}
	done := make(chan result, 1)
	go func() {
		got, err := sf.parse(t.Context(), tty, &errOut)
		done <- result{got, err}
	}()
	waitEchoOff(t, tty, &errOut, "Secret token")
	secret := strings.Repeat("k", 6000)
	go controller.Write([]byte(secret + "\n"))
	go readAvailable(controller) // drains what the terminal shows, if anything
	var r result
	select {
	case r = <-done:
	case <-time.After(10 * time.Second):
		controller.Write([]byte("\n"))
		t.Fatal("still reading 10 s after a line was typed")
	}
	if r.err == nil && r.s["token"] != secret {
		t.Errorf("--secret-file token=- at a terminal, a %d-byte secret typed: read %d bytes with no error: the secret sent is cut short", len(secret), len(r.s["token"]))
	}
}

// TestGroupJobOfVolumesHandedOverToTheDefaultNamespaceNamesIt: a volume handed over with
// NOMAD_NAMESPACE unset is in Nomad's namespace default for good (its mark records "default").
// The group job exported afterwards named no namespace, as before the fix for "team": run from a
// shell whose NOMAD_NAMESPACE names another namespace, it landed there, where Nomad has no such
// volume, the very case TestGroupJobOfVolumesHandedOverGoesToTheirNomadNamespace mends. Found by
// helper review71 (own review).
func TestGroupJobOfVolumesHandedOverToTheDefaultNamespaceNamesIt(t *testing.T) {
	h := newCLIHarness(t)
	file := perAllocGroupFile(t, 2, "logs")
	createSingleWriter(t, h.e, "logs[0]", "logs[1]")
	for _, id := range []string{"logs[0]", "logs[1]"} {
		if _, err := h.e.HandOver(h.ctx, id, engine.HandoverTarget{Address: "http://127.0.0.1:4646", Namespace: "default"}, false, nil); err != nil {
			t.Fatal(err)
		}
	}
	var dir string
	_, stderr, err := runExportNomad(t, h, func(o *ExportNomadOptions) { o.GroupFiles = []string{file}; o.NoPluginJob = true; dir = o.OutDir })
	if err != nil {
		t.Fatalf("export nomad --group-file: %v\n%s", err, stderr)
	}
	job, err := os.ReadFile(filepath.Join(dir, "job-web.nomad.hcl"))
	if err != nil {
		t.Fatal(err)
	}
	if !regexp.MustCompile(`(?m)^\s*namespace\s*=\s*"default"`).Match(job) {
		t.Errorf("the job of a group whose volumes Nomad has in namespace default (handed over there, the mark records it) names no namespace: run with NOMAD_NAMESPACE=team, it lands in team, where Nomad has no volume logs[0]\njob:\n%s", job)
	}
}

// TestGuessLetGoStillSetsTheLimitGiven: `volume expand v --size SIZE --limit L` at the size
// recorded sets capacity_max to L. Where the expand let go of a node expansion owed as a guess
// (the node half has no EXPAND_VOLUME), the early return this round's note added skipped that:
// the command exited 0, printed its note, and the --limit given was dropped. Found by helper
// review71 (own review).
func TestGuessLetGoStillSetsTheLimitGiven(t *testing.T) {
	ctx := context.Background()
	cfg := csitest.DefaultMemConfig()
	cfg.Node.ExpandVolume = false
	cfg.Controller.ListVolumes = false
	backend := csitest.NewMemPlugin(cfg)
	faults := csitest.NewFaults()
	ctrlSock, _ := csitest.Serve(t, csitest.WithFaults(faults), csitest.WithRegister(func(s *grpc.Server) {
		backend.RegisterServices(s, csitest.Identity, csitest.Controller)
	}))
	nodeSock, _ := csitest.Serve(t, csitest.WithRegister(func(s *grpc.Server) {
		backend.RegisterServices(s, csitest.Identity, csitest.Node)
	}))
	e := openEngine(t, filepath.Join(t.TempDir(), "state"))
	if _, err := e.RegisterPlugin(ctx, spec.Plugin{ID: "split", Type: spec.PluginController, ControllerSocket: ctrlSock}); err != nil {
		t.Fatal(err)
	}
	if _, err := e.CreateVolume(ctx, spec.Volume{ID: "v", Name: "v", Type: "csi", PluginID: "split", CapacityMin: 1 << 20,
		Capabilities: []spec.Capability{{AccessMode: spec.SingleNodeWriter, AttachmentMode: spec.FileSystem}}}); err != nil {
		t.Fatal(err)
	}
	faults.Inject(csi.RPCControllerExpandVolume, csitest.Fault{Lost: true, Times: 1})
	faults.Inject(csi.RPCControllerExpandVolume, csitest.Fault{Answer: func(m proto.Message) {
		m.(*csipb.ControllerExpandVolumeResponse).NodeExpansionRequired = false
	}})
	if code, errOut := runOn(ctx, e, "volume", "expand", "v", "--size", "4MiB"); code != ExitOK {
		t.Fatalf("expand through the controller half: exit %d: %s", code, errOut)
	}
	if v, err := e.Volume(ctx, "v"); err != nil || v.NodeExpansionOwed != 4<<20 {
		t.Fatalf("after the lost answer: owed %d (%v); want the 4MiB owed as a guess", v.NodeExpansionOwed, err)
	}
	if _, err := e.RegisterPlugin(ctx, spec.Plugin{ID: "split", Type: spec.PluginNode, NodeSocket: nodeSock}); err != nil {
		t.Fatal(err)
	}
	code, out, errOut := runOnOut(ctx, e, "volume", "expand", "v", "--size", "4MiB", "--limit", "8MiB")
	if code != ExitOK {
		t.Fatalf("expand --limit 8MiB: exit %d: %s", code, errOut)
	}
	v, err := e.Volume(ctx, "v")
	if err != nil {
		t.Fatal(err)
	}
	if v.RequestedMax != 8<<20 {
		t.Errorf("`volume expand v --size 4MiB --limit 8MiB` (the guess let go) exited 0 and left capacity_max %d; want 8MiB, the --limit given\nstdout: %s\nstderr: %s", v.RequestedMax, out, errOut)
	}
}
