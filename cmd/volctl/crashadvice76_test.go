package main

import (
	"strings"
	"testing"

	"github.com/volctl/volctl/internal/shellquote"
	"github.com/volctl/volctl/internal/spec"
)

// A crash under --state-dir advised "`volctl reconcile` finishes what it left half-done" bare,
// the crash package writing its report to the process's stderr itself: pasted, the reconcile
// read the default state dir and finished nothing of what the crash left. It carries the
// --state-dir given, as every other piece of advice on stderr does (cli's stateDirAdvice,
// crash.Advise). Found by helper review76 (own2).
func TestCrashReportAdviceCarriesTheStateDirGiven(t *testing.T) {
	t.Parallel()
	env := newHostEnv(t)
	bin := buildVolctl(t, failpointsTag)
	out, err := env.runBinary(bin, []string{"VOLCTL_FAILPOINT=create:intent=panic"},
		"--state-dir", env.state, "volume", "create", writeVolumeSpec(t, "vol", spec.SingleNodeWriter))
	if err == nil || !strings.Contains(out, "volctl crashed") {
		t.Fatalf("volume create armed to panic: %v\n%s", err, out)
	}
	if want := "`volctl --state-dir " + shellquote.Arg(env.state) + " reconcile`"; !strings.Contains(out, want) {
		t.Errorf("the crash report under --state-dir %s:\n%s\nwant its advice to read %s", env.state, out, want)
	}
	env.ok("reconcile") // finishes the create
	env.checkInvariants()
}
