package main

import (
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/volctl/volctl/internal/crash"
	"github.com/volctl/volctl/internal/hostpath"
	"github.com/volctl/volctl/internal/spec"
)

// TestPanicExitsWithTheCrashCode: a panic in volctl, on the command's goroutine (a create) or
// in a goroutine volctl starts (a restore worker of reconcile), exits with crash.ExitCode, not
// Go's 2, which volctl's table gives to usage errors, and leaves the panic and what to do on
// stderr. Failpoints armed NAME=panic panic where a bug would.
func TestPanicExitsWithTheCrashCode(t *testing.T) {
	t.Parallel()
	env := newHostEnv(t)
	bin := buildVolctl(t, failpointsTag)
	check := func(what string, out string, err error, panicked string) {
		t.Helper()
		var ee *exec.ExitError
		if !errors.As(err, &ee) || ee.ExitCode() != crash.ExitCode {
			t.Errorf("%s that panicked: %v; want exit status %d\n%s", what, err, crash.ExitCode, out)
		}
		for _, want := range []string{"panic: failpoint " + panicked, "goroutine ", "volctl crashed", "volctl reconcile"} {
			if !strings.Contains(out, want) {
				t.Errorf("%s that panicked says no %q:\n%s", what, want, out)
			}
		}
	}
	out, err := env.runBinary(bin, []string{"VOLCTL_FAILPOINT=create:intent=panic"}, "volume", "create", writeVolumeSpec(t, "vol", spec.SingleNodeWriter))
	check("volume create", out, err, "create:intent")
	env.ok("reconcile") // finishes the create
	env.ok("volume", "claim", "vol", "--alloc", "a")
	if err := hostpath.UnmountAll(env.state); err != nil { // what a reboot does to the mounts
		t.Fatal(err)
	}
	out, err = env.runBinary(bin, []string{"VOLCTL_FAILPOINT=rpc:NodeStageVolume=panic"}, "reconcile")
	check("reconcile (its restore worker)", out, err, "rpc:NodeStageVolume")
	env.ok("reconcile")
	env.ok("volume", "release", "vol", "--alloc", "a")
	env.checkInvariants()
}

// A crash report shows the panic's value, which may be anything: an error wrapping what a
// plugin echoed, a request printed whole. It is scrubbed of the secrets the state holds, as an
// error is (crash.Redact, cli's redactCrashes): a panic carrying a volume's secret (a failpoint
// armed panic:TEXT) does not print it, and still exits with the crash code and its stack.
func TestPanicCarryingASecretIsScrubbed(t *testing.T) {
	t.Parallel()
	env := newHostEnv(t)
	bin := buildVolctl(t, failpointsTag)
	const secret = "crash-report-secret-5f3a9c"
	path := filepath.Join(t.TempDir(), "volume.hcl")
	src := fmt.Sprintf("id = \"vol\"\nname = \"vol\"\ntype = \"csi\"\nplugin_id = \"hp\"\ncapacity_min = \"1MiB\"\n"+
		"capability {\n  access_mode = %q\n  attachment_mode = \"file-system\"\n}\nsecrets {\n  token = %q\n}\n", spec.SingleNodeWriter, secret)
	if err := os.WriteFile(path, []byte(src), 0o600); err != nil {
		t.Fatal(err)
	}
	check := func(what, failpoint string, args ...string) {
		t.Helper()
		out, err := env.runBinary(bin, []string{"VOLCTL_FAILPOINT=" + failpoint + "=panic:the request held " + secret}, args...)
		var ee *exec.ExitError
		if !errors.As(err, &ee) || ee.ExitCode() != crash.ExitCode {
			t.Errorf("%s that panicked: %v; want exit status %d\n%s", what, err, crash.ExitCode, out)
		}
		if strings.Contains(out, secret) {
			t.Errorf("the crash report of %s prints the volume's secret:\n%s", what, out)
		}
		for _, want := range []string{"panic: failpoint " + failpoint + ": the request held [REDACTED]", "goroutine ", "volctl crashed"} {
			if !strings.Contains(out, want) {
				t.Errorf("the crash report of %s says no %q:\n%s", what, want, out)
			}
		}
	}
	check("volume create", "create:intent", "volume", "create", path)
	env.ok("reconcile") // finishes the create
	// The agent's engine is its own: its restore at start, on a goroutine of its own.
	env.ok("volume", "claim", "vol", "--alloc", "a")
	if err := hostpath.UnmountAll(env.state); err != nil { // what a reboot does to the mounts
		t.Fatal(err)
	}
	check("the agent (its restore)", "rpc:NodeStageVolume", "agent")
	env.ok("reconcile")
	// A secret given on the command line, which the state does not hold.
	const given = "given-secret-on-the-command-line-7d21"
	out, err := env.runBinary(bin, []string{"VOLCTL_FAILPOINT=rpc:ListSnapshots=panic:the request held " + given},
		"volume", "snapshot", "list", "--secret", "token="+given)
	if strings.Contains(out, given) || !strings.Contains(out, "the request held [REDACTED]") || !strings.Contains(out, "volctl crashed") {
		t.Errorf("the crash report of snapshot list --secret: %v\n%s\nwant it to crash with the given secret scrubbed", err, out)
	}
	env.ok("volume", "release", "vol", "--alloc", "a")
	env.checkInvariants()
}
