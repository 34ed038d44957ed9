package main

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/moby/sys/mountinfo"

	"github.com/volctl/volctl/internal/csi"
	"github.com/volctl/volctl/internal/engine"
	"github.com/volctl/volctl/internal/hostpath"
	"github.com/volctl/volctl/internal/hostpath/hostpathtest"
	"github.com/volctl/volctl/internal/spec"
	"github.com/volctl/volctl/internal/store"
)

// crashEnv is a state dir and the built-in plugin (with attach, so every RPC of both paths is
// sent) served by the test process, and the volctl binary run against them as separate
// processes that a failpoint or a SIGKILL may kill at any moment.
type crashEnv struct {
	t      *testing.T
	state  string
	socket string
	plugin *hostpath.Plugin
}

func newCrashEnv(t *testing.T) *crashEnv {
	t.Helper()
	hostpathtest.RequireMount(t)
	srv := hostpathtest.Start(t, hostpath.Config{Root: hostpathtest.MountDir(t), NodeID: "n1", EnableAttach: true})
	env := &crashEnv{t: t, state: hostpathtest.MountDir(t), socket: srv.Socket, plugin: srv.Plugin}
	env.ok("plugin", "register", "--id", "hp", "--socket", env.socket)
	return env
}

// run runs volctl with extra environment ("K=V") and returns its output and error.
func (env *crashEnv) run(extraEnv []string, args ...string) (string, error) {
	cmd := exec.Command("volctl", args...)
	cmd.Env = append(os.Environ(), "VOLCTL_STATE_DIR="+env.state, "NO_COLOR=1")
	cmd.Env = append(cmd.Env, extraEnv...)
	var out bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &out
	err := cmd.Run()
	return out.String(), err
}

func (env *crashEnv) ok(args ...string) string {
	env.t.Helper()
	out, err := env.run(nil, args...)
	if err != nil {
		env.t.Fatalf("volctl %s: %v\n%s", strings.Join(args, " "), err, out)
	}
	return out
}

// crash runs volctl with a failpoint and requires that it died of SIGKILL there.
func (env *crashEnv) crash(failpoint string, args ...string) {
	env.t.Helper()
	out, err := env.run([]string{engine.FailpointEnv + "=" + failpoint}, args...)
	if !killed(err) {
		env.t.Fatalf("volctl %s with failpoint %s: %v (want killed at the failpoint)\n%s", strings.Join(args, " "), failpoint, err, out)
	}
}

func killed(err error) bool {
	var ee *exec.ExitError
	if !errors.As(err, &ee) {
		return false
	}
	ws, ok := ee.Sys().(syscall.WaitStatus)
	return ok && ws.Signaled() && ws.Signal() == syscall.SIGKILL
}

func (env *crashEnv) createVolume(id string, mode spec.AccessMode) {
	env.t.Helper()
	env.ok("volume", "create", writeVolumeSpec(env.t, id, mode))
}

// writeVolumeSpec writes a create spec for a 1 MiB file-system volume of the "hp" plugin with
// one capability, and returns its path.
func writeVolumeSpec(tb testing.TB, id string, mode spec.AccessMode) string {
	tb.Helper()
	path := filepath.Join(tb.TempDir(), "volume.hcl")
	src := fmt.Sprintf("id = %q\nname = %q\ntype = \"csi\"\nplugin_id = \"hp\"\ncapacity_min = \"1MiB\"\ncapability {\n  access_mode = %q\n  attachment_mode = \"file-system\"\n}\n", id, id, mode)
	if err := os.WriteFile(path, []byte(src), 0o600); err != nil {
		tb.Fatal(err)
	}
	return path
}

// checkInvariants asserts what must hold after a reconcile: the store and the kernel's mount
// table agree (every published claim mounted, every staged volume staged, nothing else mounted
// under the state dir), no claim is stuck, no volume is claimed beyond its access mode, and the
// plugin has exactly the volumes the store knows (none created twice).
func (env *crashEnv) checkInvariants() {
	t := env.t
	t.Helper()
	ctx := context.Background()
	st, err := store.Open(ctx, env.state)
	if err != nil {
		t.Fatal(err)
	}
	defer st.Close()
	var (
		claims   []store.Claim
		stagings []store.Staging
		vols     []store.Volume
	)
	if err := st.View(ctx, func(tx *store.Tx) error {
		var err error
		if claims, err = tx.Claims().ListAll(); err != nil {
			return err
		}
		if stagings, err = tx.Stagings().List(); err != nil {
			return err
		}
		vols, err = tx.Volumes().List(store.VolumeFilter{})
		return err
	}); err != nil {
		t.Fatal(err)
	}
	mounts, err := mountinfo.GetMounts(mountinfo.PrefixFilter(env.state))
	if err != nil {
		t.Fatal(err)
	}
	mounted := map[string]bool{}
	for _, m := range mounts {
		mounted[m.Mountpoint] = true
	}
	expected := map[string]bool{}
	perVolume := map[string][]store.Claim{}
	for _, c := range claims {
		if !c.AtRest() {
			t.Errorf("claim %q/%q is stuck: state %s releasing %v needs_reconcile %v (%s)", c.VolumeID, c.Alloc, c.State, c.Releasing, c.NeedsReconcile, c.LastError)
		}
		if !mounted[c.TargetPath] {
			t.Errorf("claim %q/%q is published but %s is not mounted", c.VolumeID, c.Alloc, c.TargetPath)
		}
		expected[c.TargetPath] = true
		perVolume[c.VolumeID] = append(perVolume[c.VolumeID], c)
	}
	for _, s := range stagings {
		if s.Staged {
			if !mounted[s.StagingPath] {
				t.Errorf("volume %q is staged but %s is not mounted", s.VolumeID, s.StagingPath)
			}
			expected[s.StagingPath] = true
		}
		if len(perVolume[s.VolumeID]) == 0 {
			t.Errorf("volume %q has a staging (%+v) but no claim: leaked", s.VolumeID, s)
		}
	}
	for m := range mounted {
		if !expected[m] {
			t.Errorf("%s is mounted but the store does not account for it: leaked mount", m)
		}
	}
	for _, v := range vols {
		cs := perVolume[v.ID]
		writers := 0
		for _, c := range cs {
			if c.Mode == store.ClaimWrite {
				writers++
			}
		}
		if v.Capabilities[0].AccessMode == spec.SingleNodeWriter && len(cs) > 1 {
			t.Errorf("single-node-writer volume %q has %d claims", v.ID, len(cs))
		}
		if v.Capabilities[0].AccessMode == spec.MultiNodeSingleWriter && writers > 1 {
			t.Errorf("multi-node-single-writer volume %q has %d writers", v.ID, writers)
		}
		if v.State != store.VolumeReady {
			t.Errorf("volume %q left %s", v.ID, v.State)
		}
	}
	c, err := csi.New(csi.Config{ControllerSocket: env.socket})
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	listed, err := c.ListVolumes(ctx, csi.ListVolumesRequest{})
	if err != nil {
		t.Fatal(err)
	}
	if len(listed.Entries) != len(vols) {
		t.Errorf("the plugin has %d volumes, the store %d: a volume was created twice or lost", len(listed.Entries), len(vols))
	}
}

// TestCrashAtEveryCheckpoint kills volctl right after each committed checkpoint, and right after
// each RPC before its answer is committed, on the publish and release paths and in create and
// delete; `volctl reconcile` must then bring everything back in line.
func TestCrashAtEveryCheckpoint(t *testing.T) {
	env := newCrashEnv(t)
	env.createVolume("vol", spec.SingleNodeWriter)

	claimPoints := []string{"claim:taken", "rpc:ControllerPublishVolume", "claim:controller-published",
		"rpc:NodeStageVolume", "claim:node-staged", "rpc:NodePublishVolume"}
	for _, fp := range claimPoints {
		t.Run(fp, func(t *testing.T) {
			env.t = t
			env.crash(fp, "volume", "claim", "vol", "--alloc", "a")
			env.ok("reconcile")
			env.checkInvariants()
			// The claim was finished by reconcile, not duplicated: release it the normal way.
			out := env.ok("volume", "status", "vol", "--json")
			if strings.Count(out, `"alloc": "a"`) != 1 {
				t.Fatalf("after reconcile the claim is not there exactly once:\n%s", out)
			}
			env.ok("volume", "release", "vol", "--alloc", "a")
			env.checkInvariants()
		})
	}
	releasePoints := []string{"release:unpublishing", "rpc:NodeUnpublishVolume", "release:node-detached",
		"rpc:NodeUnstageVolume", "rpc:ControllerUnpublishVolume", "release:controller-detached"}
	for _, fp := range releasePoints {
		t.Run(fp, func(t *testing.T) {
			env.t = t
			env.ok("volume", "claim", "vol", "--alloc", "a")
			env.crash(fp, "volume", "release", "vol", "--alloc", "a")
			env.ok("reconcile")
			env.checkInvariants()
			if out := env.ok("volume", "status", "vol", "--json"); strings.Contains(out, `"alloc": "a"`) {
				t.Fatalf("the released claim is still there after reconcile:\n%s", out)
			}
		})
	}
	for _, fp := range []string{"create:intent", "rpc:CreateVolume", "create:ready"} {
		t.Run(fp, func(t *testing.T) {
			env.t = t
			id := "c-" + strings.NewReplacer(":", "-").Replace(fp)
			path := writeVolumeSpec(t, id, spec.SingleNodeWriter)
			env.crash(fp, "volume", "create", path)
			env.ok("reconcile")
			env.checkInvariants()
			env.ok("volume", "create", path) // the same spec again changes nothing
			env.checkInvariants()
		})
	}
	for _, fp := range []string{"delete:intent", "rpc:DeleteVolume"} {
		t.Run(fp, func(t *testing.T) {
			env.t = t
			id := "d-" + strings.NewReplacer(":", "-").Replace(fp)
			env.createVolume(id, spec.SingleNodeWriter)
			env.crash(fp, "volume", "delete", id, "--yes")
			env.ok("reconcile")
			env.checkInvariants()
			if out, err := env.run(nil, "volume", "status", id); err == nil {
				t.Fatalf("deleted volume still there:\n%s", out)
			}
		})
	}
}

// TestCrashAtRandomMoments kills claim and release processes with SIGKILL after a random delay,
// many rounds, then reconciles and checks the invariants.
func TestCrashAtRandomMoments(t *testing.T) {
	env := newCrashEnv(t)
	env.createVolume("shared", spec.MultiNodeSingleWriter)
	env.createVolume("solo", spec.SingleNodeWriter)
	rounds := 30
	if testing.Short() {
		rounds = 8
	}
	rng := rand.New(rand.NewPCG(uint64(time.Now().UnixNano()), 7))
	for round := 0; round < rounds; round++ {
		var wg sync.WaitGroup
		for i := 0; i < 3; i++ {
			vol := []string{"shared", "solo"}[rng.IntN(2)]
			alloc := fmt.Sprintf("a%d", rng.IntN(3))
			args := []string{"volume", "claim", vol, "--alloc", alloc}
			if vol == "shared" && rng.IntN(2) == 0 {
				args = append(args, "--read-only")
			}
			if rng.IntN(2) == 0 {
				args = []string{"volume", "release", vol, "--alloc", alloc}
			}
			delay := time.Duration(rng.IntN(40)) * time.Millisecond
			wg.Add(1)
			go func() {
				defer wg.Done()
				cmd := exec.Command("volctl", args...)
				cmd.Env = append(os.Environ(), "VOLCTL_STATE_DIR="+env.state)
				if err := cmd.Start(); err != nil {
					t.Error(err)
					return
				}
				time.Sleep(delay)
				_ = cmd.Process.Signal(syscall.SIGKILL)
				_ = cmd.Wait()
			}()
		}
		wg.Wait()
		if out, err := env.run(nil, "reconcile"); err != nil {
			t.Fatalf("round %d: reconcile: %v\n%s", round, err, out)
		}
		env.checkInvariants()
		if t.Failed() {
			t.Fatalf("invariants broken after round %d", round)
		}
	}
}

// TestClaimRace: 8 processes claim one single-node-writer volume at once, 20 rounds; exactly
// one wins each round, and the others exit 4 naming the holder.
func TestClaimRace(t *testing.T) {
	env := newCrashEnv(t)
	env.createVolume("solo", spec.SingleNodeWriter)
	const procs, rounds = 8, 20
	for round := 0; round < rounds; round++ {
		type result struct {
			alloc string
			out   string
			code  int
		}
		results := make([]result, procs)
		var wg sync.WaitGroup
		start := make(chan struct{})
		for i := 0; i < procs; i++ {
			wg.Add(1)
			go func() {
				defer wg.Done()
				alloc := fmt.Sprintf("r%d-p%d", round, i)
				<-start
				out, err := env.run(nil, "volume", "claim", "solo", "--alloc", alloc)
				code := 0
				var ee *exec.ExitError
				if errors.As(err, &ee) {
					code = ee.ExitCode()
				} else if err != nil {
					code = -1
				}
				results[i] = result{alloc, out, code}
			}()
		}
		close(start)
		wg.Wait()
		var winner string
		for _, r := range results {
			switch r.code {
			case 0:
				if winner != "" {
					t.Fatalf("round %d: two winners, %s and %s", round, winner, r.alloc)
				}
				winner = r.alloc
			case 4:
			default:
				t.Fatalf("round %d: %s exited %d:\n%s", round, r.alloc, r.code, r.out)
			}
		}
		if winner == "" {
			t.Fatalf("round %d: nobody won", round)
		}
		for _, r := range results {
			if r.code == 4 && !strings.Contains(r.out, fmt.Sprintf("alloc %q", winner)) {
				t.Fatalf("round %d: the refusal does not name the holder %q:\n%s", round, winner, r.out)
			}
		}
		env.ok("volume", "release", "solo", "--alloc", winner)
	}
	env.checkInvariants()
}
