package main

import (
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"syscall"
	"testing"

	"github.com/volctl/volctl/internal/engine"
	"github.com/volctl/volctl/internal/hostpath"
	"github.com/volctl/volctl/internal/hostpath/hostpathtest"
	"github.com/volctl/volctl/internal/spec"
)

// groupWithMounts writes a group "web" of one alloc holding the volumes named (both when none is:
// "outer" and "inner"), "outer" bound at dest/outer and "inner" at dest/outer/inner (below it:
// bound on the outer volume's directory), and returns the spec's path.
func groupWithMounts(t *testing.T, dest string, vols ...string) string {
	t.Helper()
	if len(vols) == 0 {
		vols = []string{"outer", "inner"}
	}
	path := filepath.Join(t.TempDir(), "web.hcl")
	var src strings.Builder
	src.WriteString("group \"web\" {\n")
	for _, v := range vols {
		fmt.Fprintf(&src, "  volume %q {\n    type = \"csi\"\n    source = %q\n    access_mode = \"single-node-writer\"\n    attachment_mode = \"file-system\"\n  }\n", v, v)
	}
	for _, v := range vols {
		d := map[string]string{"outer": filepath.Join(dest, "outer"), "inner": filepath.Join(dest, "outer", "inner")}[v]
		fmt.Fprintf(&src, "  volume_mount {\n    volume = %q\n    destination = %q\n  }\n", v, d)
	}
	src.WriteString("}\n")
	if err := os.WriteFile(path, []byte(src.String()), 0o600); err != nil {
		t.Fatal(err)
	}
	return path
}

// newNestedEnv is a hostEnv with the volumes "outer" and "inner", and a mount directory dest
// for groupWithMounts' destinations (outer, inner: their paths), unmounted at the end.
func newNestedEnv(t *testing.T) (env *hostEnv, dest, outer, inner string) {
	t.Helper()
	env = newHostEnv(t)
	env.createVolume("outer", spec.SingleNodeWriter)
	env.createVolume("inner", spec.SingleNodeWriter)
	dest = hostpathtest.MountDir(t)
	return env, dest, filepath.Join(dest, "outer"), filepath.Join(dest, "outer", "inner")
}

// reboot unmounts what a reboot would: everything under the state dir and under dest.
func (env *hostEnv) reboot(dest string) {
	env.t.Helper()
	for _, dir := range []string{dest, env.state} {
		if err := hostpath.UnmountAll(dir); err != nil {
			env.t.Fatal(err)
		}
	}
}

// groupClaims is what `group status web` says alloc web[0] holds, by volume: its claims'
// targets and states.
func (env *hostEnv) groupClaims() map[string]engine.ClaimInfo {
	env.t.Helper()
	var g engine.GroupInfo
	if err := json.Unmarshal([]byte(env.ok("group", "status", "web", "--json")), &g); err != nil {
		env.t.Fatalf("group status --json: %v", err)
	}
	out := map[string]engine.ClaimInfo{}
	for _, a := range g.Allocs {
		for _, c := range a.Claims {
			out[c.VolumeID] = c
		}
	}
	return out
}

// boundAt reports whether dest is a mount of the very directory target is (a bind of it).
func boundAt(t *testing.T, dest, target string) bool {
	t.Helper()
	var d, tg syscall.Stat_t
	if err := syscall.Stat(dest, &d); err != nil {
		return false
	}
	if err := syscall.Stat(target, &tg); err != nil {
		t.Fatalf("the claim's target %s: %v", target, err)
	}
	var parent syscall.Stat_t
	if err := syscall.Stat(filepath.Dir(dest), &parent); err == nil && parent.Dev == d.Dev && d.Dev != tg.Dev {
		return false
	}
	return d.Dev == tg.Dev && d.Ino == tg.Ino
}

// TestCrashInAGroupRunWithVolumeMounts kills `group run` of a group whose alloc binds two volumes
// (one volume_mount below the other) at each step of its claims: a claim taken, its RPCs
// answered, a claim recorded published with its volume_mounts not yet bound. `volctl reconcile`
// must then leave the alloc holding both volumes, each bound at its destination (the inner one
// on the outer volume's directory), and `group stop` release both with nothing left bound.
func TestCrashInAGroupRunWithVolumeMounts(t *testing.T) {
	t.Parallel()
	env, dest, outer, inner := newNestedEnv(t)
	bin := buildVolctl(t, failpointsTag)
	group := groupWithMounts(t, dest)
	for _, fp := range []string{"group:recorded", "claim:taken", "rpc:ControllerPublishVolume", "claim:controller-published",
		"rpc:NodeStageVolume", "claim:node-staged", "rpc:NodePublishVolume", "claim:published"} {
		t.Run(fp, func(t *testing.T) {
			env.t = t
			env.crash(bin, fp, "group", "run", group)
			env.ok("reconcile")
			env.checkInvariants()
			// Reconcile finishes the claims the run left, each bound; the run again the alloc.
			for vol, c := range env.groupClaims() {
				if d := map[string]string{"outer": outer, "inner": inner}[vol]; !boundAt(t, d, c.TargetPath) {
					t.Fatalf("after a group run killed at %s and reconcile, %s's volume_mount %s is not bound to its target %s", fp, vol, d, c.TargetPath)
				}
			}
			env.ok("group", "run", group)
			env.checkBound(outer, inner)
			env.ok("group", "stop", "web")
			env.checkInvariants()
			if mounted, err := os.ReadFile("/proc/self/mountinfo"); err != nil || strings.Contains(string(mounted), " "+dest+"/") {
				t.Fatalf("after group stop, something is still mounted below %s (%v)", dest, err)
			}
		})
	}
}

// TestCrashInAGroupStop kills `group stop` right after it recorded the group stopped, before it
// released anything, and at each step of releasing an alloc's volume_mounts and claims. The
// claims must stay held (the kill freed nothing it did not release) until `volctl reconcile`,
// which releases them as the stop would have, unbinding the destinations, so that the volumes
// are free for another alloc; `group status` says the group is stopped meanwhile.
func TestCrashInAGroupStop(t *testing.T) {
	t.Parallel()
	bin := buildVolctl(t, failpointsTag)
	for _, fp := range []string{"group:stopped", "release:unpublishing", "rpc:NodeUnpublishVolume", "release:node-detached",
		"rpc:NodeUnstageVolume", "rpc:ControllerUnpublishVolume", "release:controller-detached"} {
		t.Run(fp, func(t *testing.T) {
			env, dest, _, _ := newNestedEnv(t) // each its own: one left half-released does not fail the next
			env.ok("group", "run", groupWithMounts(t, dest))
			env.crash(bin, fp, "group", "stop", "web")
			if state := strings.TrimSpace(env.ok("group", "status", "web", "--jq", ".state")); state != "stopped" {
				t.Fatalf("after a group stop killed at %s, group status says the group is %q, want stopped", fp, state)
			}
			if out := env.ok("group", "status", "web"); !strings.Contains(out, "web[0] still holds claims the group (stopped) no longer has") ||
				!strings.Contains(out, "`volctl reconcile` releases them") || !regexp.MustCompile(`Allocs Ready += 0/1`).MatchString(out) {
				t.Fatalf("after a group stop killed at %s, group status does not say what releases the claims the stopped group still holds:\n%s", fp, out)
			}
			env.ok("reconcile")
			env.checkInvariants()
			if claims := env.groupClaims(); len(claims) != 0 {
				t.Fatalf("after a group stop killed at %s and reconcile, the group still holds %+v", fp, claims)
			}
			if mounted, err := os.ReadFile("/proc/self/mountinfo"); err != nil || strings.Contains(string(mounted), " "+dest+"/") {
				t.Fatalf("after a group stop killed at %s and reconcile, something is still mounted below %s (%v)", fp, dest, err)
			}
			for _, vol := range []string{"outer", "inner"} { // free for another alloc
				env.ok("volume", "claim", vol, "--alloc", "other")
				env.ok("volume", "release", vol, "--alloc", "other")
			}
		})
	}
}

// checkBound requires alloc web[0] to hold outer and inner, bound at outer and inner.
func (env *hostEnv) checkBound(outer, inner string) {
	t := env.t
	t.Helper()
	claims := env.groupClaims()
	if len(claims) != 2 {
		t.Fatalf("web[0] holds %d claims, want outer and inner: %+v", len(claims), claims)
	}
	if !boundAt(t, outer, claims["outer"].TargetPath) || !boundAt(t, inner, claims["inner"].TargetPath) {
		t.Fatalf("the volume_mounts are not bound: %s is outer's %v, %s is inner's %v",
			outer, boundAt(t, outer, claims["outer"].TargetPath), inner, boundAt(t, inner, claims["inner"].TargetPath))
	}
}

// TestReconcileRestoresNestedVolumeMountsAfterAReboot: a group's alloc binds volume inner below
// volume outer's destination, and a reboot loses every mount (the targets, the stagings and
// both binds). `volctl reconcile` must mount both targets again and bind outer before inner,
// on outer's directory, whatever order its workers restore the two volumes in.
func TestReconcileRestoresNestedVolumeMountsAfterAReboot(t *testing.T) {
	t.Parallel()
	env, dest, outer, inner := newNestedEnv(t)
	group := groupWithMounts(t, dest)
	for round := range 5 {
		env.ok("group", "run", group)
		env.checkBound(outer, inner)
		env.reboot(dest)
		if out, err := env.run(nil, "reconcile"); err != nil {
			t.Fatalf("round %d: reconcile after a reboot: %v\n%s", round, err, out)
		}
		env.checkInvariants()
		env.checkBound(outer, inner)
		env.ok("group", "stop", "web")
	}
}

// TestReconcileAfterARebootFinishesAGroupRunCutShortBetweenNestedVolumeMounts: a `group run` is
// killed once it took alloc web[0]'s claim on inner, its outer claim published and bound, and
// the machine reboots (every mount lost). `volctl reconcile` drives inner's claim and restores
// outer's: outer must be bound first, inner on outer's directory, or the inner bind made on the
// empty destination keeps outer's from ever being bound again (something mounted below it).
func TestReconcileAfterARebootFinishesAGroupRunCutShortBetweenNestedVolumeMounts(t *testing.T) {
	t.Parallel()
	env, dest, outer, inner := newNestedEnv(t)
	bin := buildVolctl(t, failpointsTag)
	group := groupWithMounts(t, dest)
	// The outer volume alone first: the run of both then takes inner's claim, killed there.
	first := groupWithMounts(t, dest, "outer")
	env.ok("group", "run", first)
	env.crash(bin, "claim:taken", "group", "run", group)
	env.reboot(dest)
	if out, err := env.run(nil, "reconcile"); err != nil {
		t.Fatalf("reconcile after a reboot: %v\n%s", err, out)
	}
	env.checkInvariants()
	env.checkBound(outer, inner)
	env.ok("group", "stop", "web")
	env.checkInvariants()
}
