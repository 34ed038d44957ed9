package main

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"math/rand/v2"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	csipb "github.com/container-storage-interface/spec/lib/go/csi"
	"google.golang.org/grpc"
	"google.golang.org/grpc/credentials/insecure"

	"github.com/volctl/volctl/internal/csi"
	"github.com/volctl/volctl/internal/csi/csitest"
	"github.com/volctl/volctl/internal/engine"
	"github.com/volctl/volctl/internal/hostpath"
	"github.com/volctl/volctl/internal/hostpath/hostpathtest"
	"github.com/volctl/volctl/internal/spec"
)

// crash runs volctl built with failpoints (bin, from buildVolctl with the volctl_failpoints
// tag) with one armed, and requires that it died of SIGKILL there.
func (env *hostEnv) crash(bin, failpoint string, args ...string) {
	env.t.Helper()
	out, err := env.runBinary(bin, []string{engine.FailpointEnv + "=" + failpoint}, args...)
	if !killed(err) {
		env.t.Fatalf("volctl %s with failpoint %s: %v (want killed at the failpoint)\n%s", strings.Join(args, " "), failpoint, err, out)
	}
}

// failpointsTag is the build tag that compiles failpoints into volctl (internal/engine,
// failpoint_on.go). The test binary, which scripts and the other tests run as volctl, is
// built without it unless `go test -tags volctl_failpoints` asks for it.
const failpointsTag = "volctl_failpoints"

// buildVolctl builds this package's volctl with the given build tags and returns the binary's
// path. It is built once per test process for each set of tags, into the directory the
// benchmarks' builds share (removed by TestMain once the tests have run): a dozen tests use it,
// and each build links a 27 MB binary. The go command is the one running the tests (go test
// puts its GOROOT/bin first in $PATH).
func buildVolctl(t testing.TB, tags ...string) string {
	t.Helper()
	args := volctlBuildArgs(tags...)
	return builtOnce(t, strings.Join(args, " "), ".", "volctl", args, nil)
}

// volctlBuildArgs are the go command's arguments for buildVolctl's build with tags.
func volctlBuildArgs(tags ...string) []string {
	args := []string{"build"}
	if len(tags) > 0 {
		args = append(args, "-tags", strings.Join(tags, ","))
	}
	return args
}

func killed(err error) bool {
	var ee *exec.ExitError
	if !errors.As(err, &ee) {
		return false
	}
	ws, ok := ee.Sys().(syscall.WaitStatus)
	return ok && ws.Signaled() && ws.Signal() == syscall.SIGKILL
}

// TestCrashAtEveryCheckpoint kills volctl right after each committed checkpoint, and right after
// each RPC before its answer is committed, on the publish and release paths and in create and
// delete; `volctl reconcile` must then bring everything back in line.
func TestCrashAtEveryCheckpoint(t *testing.T) {
	t.Parallel()
	env := newHostEnv(t)
	bin := buildVolctl(t, failpointsTag)
	env.createVolume("vol", spec.SingleNodeWriter)

	// check:* are the plugin's checks round 16 added (hostEnv's plugin attaches and lists
	// published nodes): the ListVolumes before a first attachment, and the one after
	// ControllerUnpublishVolume and DeleteVolume answered, before their answer is recorded.
	claimPoints := []string{"claim:taken", "check:attached-already", "rpc:ControllerPublishVolume", "claim:controller-published",
		"rpc:NodeStageVolume", "claim:node-staged", "rpc:NodePublishVolume"}
	for _, fp := range claimPoints {
		t.Run(fp, func(t *testing.T) {
			env.t = t
			env.crash(bin, fp, "volume", "claim", "vol", "--alloc", "a")
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
		"rpc:NodeUnstageVolume", "check:ControllerUnpublishVolume", "rpc:ControllerUnpublishVolume", "release:controller-detached"}
	for _, fp := range releasePoints {
		t.Run(fp, func(t *testing.T) {
			env.t = t
			env.ok("volume", "claim", "vol", "--alloc", "a")
			env.crash(bin, fp, "volume", "release", "vol", "--alloc", "a")
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
			env.crash(bin, fp, "volume", "create", path)
			env.ok("reconcile")
			env.checkInvariants()
			env.ok("volume", "create", path) // the same spec again changes nothing
			env.checkInvariants()
		})
	}
	for _, fp := range []string{"delete:intent", "check:DeleteVolume", "rpc:DeleteVolume"} {
		t.Run(fp, func(t *testing.T) {
			env.t = t
			id := "d-" + strings.NewReplacer(":", "-").Replace(fp)
			env.createVolume(id, spec.SingleNodeWriter)
			env.crash(bin, fp, "volume", "delete", id, "--yes")
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
	// Not parallel: its kills come 0-40 ms after a start, and a loaded machine would move
	// them all before the command does anything, which is not what it means to test.
	env := newHostEnv(t)
	env.createVolume("shared", spec.MultiNodeSingleWriter)
	env.createVolume("solo", spec.SingleNodeWriter)
	waitPrebuilt() // no build of this package's beside the rounds either
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
				cmd := exec.Command(shortVolctl(t), args...)
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

// TestClaimRace: 8 processes claim one single-node-writer volume at once, 8 rounds; exactly
// one wins each round, and the others exit 4 naming the holder.
//
// The rounds are as many as it takes to catch admission checking the live claims outside the
// write transaction that inserts the claim (its check and its insert no longer one under
// SQLite's write lock: the mutation of engine.admit that reads them in a View first). With
// that mutation, two or more claims won in 12 of 20 rounds (load 40 on 2 cores), and the test
// failed by round 2 in each of six runs (at rounds 0, 0, 1, 0, 1, 2). 20 rounds were 180
// volctl processes; 8 rounds miss that mutation with a chance of about 0.4^8, 1 in 1500.
func TestClaimRace(t *testing.T) {
	t.Parallel()
	env := newHostEnv(t)
	env.createVolume("solo", spec.SingleNodeWriter)
	const procs, rounds = 8, 8
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

// TestDefaultBuildIgnoresFailpoints: volctl built without the volctl_failpoints tag, as it is
// released, does not kill itself whatever VOLCTL_FAILPOINT says. Every checkpoint a claim, a
// release, a create and a delete pass is armed; each command completes and exits 0.
func TestDefaultBuildIgnoresFailpoints(t *testing.T) {
	t.Parallel()
	bin := buildVolctl(t) // no tags: the release build
	socket, _ := csitest.Serve(t, csitest.WithServer(csitest.NewMountingMemPlugin(t, csitest.DefaultMemConfig())))
	env := &hostEnv{t: t, state: t.TempDir(), socket: socket}
	armed := []string{engine.FailpointEnv + "=" + strings.Join([]string{
		"claim:taken", "rpc:ControllerPublishVolume", "claim:controller-published", "rpc:NodeStageVolume",
		"claim:node-staged", "rpc:NodePublishVolume", "release:unpublishing", "rpc:NodeUnpublishVolume",
		"release:node-detached", "rpc:NodeUnstageVolume", "rpc:ControllerUnpublishVolume",
		"release:controller-detached", "create:intent", "rpc:CreateVolume", "create:ready",
		"delete:intent", "rpc:DeleteVolume", "expand:node-owed", "rpc:NodeExpandVolume", "snapshot:intent",
		"rpc:CreateSnapshot"}, ",")}
	for _, args := range [][]string{
		{"plugin", "register", "--id", "hp", "--socket", socket},
		{"volume", "create", writeVolumeSpec(t, "vol", spec.SingleNodeWriter)},
		{"volume", "claim", "vol", "--alloc", "a"},
		{"volume", "expand", "vol", "--size", "2MiB"},
		{"volume", "snapshot", "create", "vol", "s1"},
		{"volume", "release", "vol", "--alloc", "a"},
		{"volume", "delete", "vol", "--yes"},
	} {
		out, err := env.runBinary(bin, armed, args...)
		if killed(err) {
			t.Fatalf("volctl %s (default build) killed itself at a failpoint:\n%s", strings.Join(args, " "), out)
		}
		if err != nil {
			t.Fatalf("volctl %s (default build): %v\n%s", strings.Join(args, " "), err, out)
		}
	}
}

// TestCrashExpandNodeOwed kills `volume expand` once the new size and the node expansion it
// owes are committed, before NodeExpandVolume, and right after NodeExpandVolume returned before
// the debt was cleared: the debt is recorded, and `volctl reconcile` (the first case) or the
// same expand again (the second) sends it. The in-memory plugin bind-mounts what it publishes
// (volctl insists on a mount point at the target), so this needs mount privileges.
func TestCrashExpandNodeOwed(t *testing.T) {
	t.Parallel()
	bin := buildVolctl(t, failpointsTag)
	env, mem, target := newClaimedMemEnv(t)
	owed := env.nodeExpansionOwed
	nodeExpands := func() []csi.NodeExpandVolumeRequest { return csitest.Requests[csi.NodeExpandVolumeRequest](mem) }

	env.crash(bin, "expand:node-owed", "volume", "expand", "vol", "--size", "2MiB")
	if got := owed(); got != "2097152" || len(nodeExpands()) != 0 {
		t.Fatalf("after the crash: owed %q, NodeExpandVolume %+v; want 2097152 owed and none sent", got, nodeExpands())
	}
	env.ok("reconcile")
	if got, reqs := owed(), nodeExpands(); got != "0" || len(reqs) != 1 || reqs[0].VolumePath != target || reqs[0].CapacityMin != 2<<20 {
		t.Fatalf("after reconcile: owed %q, NodeExpandVolume %+v; want it sent at %s and nothing owed", got, reqs, target)
	}

	env.crash(bin, "rpc:NodeExpandVolume", "volume", "expand", "vol", "--size", "4MiB")
	if got := owed(); got != "4194304" {
		t.Fatalf("after the crash past NodeExpandVolume: owed %q, want 4194304 (not yet cleared)", got)
	}
	env.ok("volume", "expand", "vol", "--size", "4MiB")
	if got, reqs := owed(), nodeExpands(); got != "0" || len(reqs) != 3 || reqs[2].CapacityMin != 4<<20 {
		t.Fatalf("after expanding again: owed %q, NodeExpandVolume %+v; want it sent again and nothing owed", got, reqs)
	}
}

// TestCrashSnapshot kills `volume snapshot create` right after it committed the snapshot's
// intent, and right after CreateSnapshot returned before the snapshot was recorded: the
// snapshot is listed as pending, and `volctl reconcile` finishes it, or `snapshot delete
// PLUGIN NAME` removes it, leaving the plugin and the records in agreement. Snapshots need no
// mounts, so this runs without mount privileges.
func TestCrashSnapshot(t *testing.T) {
	t.Parallel()
	bin := buildVolctl(t, failpointsTag)
	env := newSnapshotEnv(t)
	list := env.snapshots
	for _, fp := range []string{"snapshot:intent", "rpc:CreateSnapshot"} {
		for _, finish := range []string{"reconcile", "delete"} {
			t.Run(fp+"/"+finish, func(t *testing.T) {
				env.t = t
				name := strings.NewReplacer(":", "-").Replace(fp) + "-" + finish
				env.crash(bin, fp, "volume", "snapshot", "create", "vol", name)
				if s, ok := list()[name]; !ok || !s.Pending || s.SourceVolumeID != "vol" {
					t.Fatalf("after the crash, snapshot %q is %+v (listed: %v), want pending, of vol", name, s, ok)
				}
				switch finish {
				case "reconcile":
					env.ok("reconcile")
					s, ok := list()[name]
					if !ok || s.Pending || s.ID == "" || !s.Recorded || !s.Listed {
						t.Fatalf("after reconcile, snapshot %q is %+v, want recorded and listed by the plugin", name, s)
					}
				case "delete":
					env.ok("volume", "snapshot", "delete", "hp", name, "--yes")
					for n, s := range list() {
						if n == name || (s.Listed && !s.Recorded) {
							t.Fatalf("after delete, the plugin or volctl still has %+v", s)
						}
					}
				}
				env.ok("reconcile") // nothing left to do, nothing wrong
			})
		}
	}
}

// TestCrashDuringARestore kills `volctl reconcile` at each step of restoring a claim after its
// mounts were lost (a reboot): the restore's commits are progress commits, and whatever point
// it dies at, the claim is never freed (issue 13 rule 1: it is still there, for the same alloc)
// and the next reconcile publishes it again, mounted, with nothing left over.
func TestCrashDuringARestore(t *testing.T) {
	t.Parallel()
	env := newHostEnv(t)
	bin := buildVolctl(t, failpointsTag)
	env.createVolume("vol", spec.SingleNodeWriter)
	for _, fp := range []string{"rpc:NodeStageVolume", "claim:node-staged", "rpc:NodePublishVolume", "claim:published"} {
		t.Run(fp, func(t *testing.T) {
			env.t = t
			env.ok("volume", "claim", "vol", "--alloc", "a")
			if err := hostpath.UnmountAll(env.state); err != nil { // what a reboot does to the mounts
				t.Fatal(err)
			}
			env.crash(bin, fp, "reconcile")
			if out := env.ok("volume", "status", "vol", "--json"); strings.Count(out, `"alloc": "a"`) != 1 {
				t.Fatalf("after a restore killed at %s the claim is not there exactly once:\n%s", fp, out)
			}
			env.ok("reconcile")
			env.checkInvariants()
			out := env.ok("volume", "status", "vol", "--json")
			if strings.Count(out, `"alloc": "a"`) != 1 || strings.Contains(out, `"degraded": true`) {
				t.Fatalf("after reconcile the claim is not there exactly once, published:\n%s", out)
			}
			env.ok("volume", "release", "vol", "--alloc", "a")
			env.checkInvariants()
		})
	}
}

// TestCrashReleaseThenReadFirst kills volctl at each point of the release path and runs read
// commands first, before anything writes: they open the WAL the killed process left, succeed,
// and show the claim still held (it was not freed: the kill came before the commit that frees
// it) or freed (the kill came after it), never lost half-way; the reconcile after them finishes
// the release.
func TestCrashReleaseThenReadFirst(t *testing.T) {
	t.Parallel()
	env := newHostEnv(t)
	bin := buildVolctl(t, failpointsTag)
	env.createVolume("vol", spec.SingleNodeWriter)
	for _, fp := range []string{"release:unpublishing", "rpc:NodeUnpublishVolume", "release:node-detached",
		"rpc:NodeUnstageVolume", "check:ControllerUnpublishVolume", "rpc:ControllerUnpublishVolume", "release:controller-detached"} {
		t.Run(fp, func(t *testing.T) {
			env.t = t
			env.ok("volume", "claim", "vol", "--alloc", "a")
			env.crash(bin, fp, "volume", "release", "vol", "--alloc", "a")
			out := env.ok("volume", "status", "vol", "--json")
			held := strings.Contains(out, `"alloc": "a"`)
			if fp != "release:controller-detached" && (!held || !strings.Contains(out, `"releasing": true`)) {
				t.Fatalf("after a release killed at %s, status shows:\n%s\nwant the claim held, releasing", fp, out)
			}
			env.ok("volume", "list")
			env.ok("status")
			env.ok("reconcile")
			env.checkInvariants()
			if out := env.ok("volume", "status", "vol", "--json"); strings.Contains(out, `"alloc": "a"`) {
				t.Fatalf("the released claim is still there after reconcile:\n%s", out)
			}
		})
	}
}

// TestCrashInTheNodeIDCorrection kills volctl in each step of round 16's node-ID correction: a
// claim recorded attached to node n1 (its ControllerPublishVolume answered, the process killed
// before recording the answer), the plugin restarted as node n2, and the reconcile that
// re-drives the claim killed after it detached n1 and before it recorded anything of n2, then
// after it listed n2's attachments and after its ControllerPublishVolume to n2. `volctl
// reconcile` must then finish the claim attached to n2 alone, and the release leave the volume
// attached nowhere.
func TestCrashInTheNodeIDCorrection(t *testing.T) {
	t.Parallel()
	hostpathtest.RequireMount(t)
	bin := buildVolctl(t, failpointsTag)
	for _, fp := range []string{"claim:old-node-detached", "check:attached-already", "rpc:ControllerPublishVolume"} {
		t.Run(fp, func(t *testing.T) {
			root := hostpathtest.MountDir(t)
			srv := hostpathtest.Start(t, hostpath.Config{Root: root, NodeID: "n1", EnableAttach: true})
			env := &hostEnv{t: t, state: hostpathtest.MountDir(t), socket: srv.Socket, plugin: srv.Plugin}
			env.ok("plugin", "register", "--id", "hp", "--socket", env.socket)
			env.createVolume("vol", spec.SingleNodeWriter)
			env.crash(bin, "rpc:ControllerPublishVolume", "volume", "claim", "vol", "--alloc", "a")
			if nodes := publishedNodes(t, env.socket); !slices.Equal(nodes, []string{"n1"}) {
				t.Fatalf("attached to %v after the first crash, want n1", nodes)
			}
			if err := srv.Stop(); err != nil {
				t.Fatal(err)
			}
			env.plugin = hostpathtest.StartAt(t, hostpath.Config{Root: root, NodeID: "n2", EnableAttach: true}, srv.Socket).Plugin

			env.crash(bin, fp, "reconcile")
			env.ok("reconcile")
			env.checkInvariants()
			if nodes := publishedNodes(t, env.socket); !slices.Equal(nodes, []string{"n2"}) {
				t.Errorf("attached to %v after reconcile, want n2 alone", nodes)
			}
			if out := env.ok("volume", "status", "vol", "--json"); strings.Count(out, `"alloc": "a"`) != 1 {
				t.Fatalf("after reconcile the claim is not there exactly once:\n%s", out)
			}
			env.ok("volume", "release", "vol", "--alloc", "a")
			env.checkInvariants()
			if nodes := publishedNodes(t, env.socket); len(nodes) != 0 {
				t.Errorf("still attached to %v after the release: an attachment was forgotten", nodes)
			}
		})
	}
}

// publishedNodes is every node ID the plugin on socket lists a volume published to
// (ListVolumes' published_node_ids), over a connection of its own, sorted.
func publishedNodes(t *testing.T, socket string) []string {
	t.Helper()
	conn, err := grpc.NewClient("unix://"+socket, grpc.WithTransportCredentials(insecure.NewCredentials()))
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()
	resp, err := csipb.NewControllerClient(conn).ListVolumes(context.Background(), &csipb.ListVolumesRequest{})
	if err != nil {
		t.Fatalf("ListVolumes on %s: %v", socket, err)
	}
	var nodes []string
	for _, e := range resp.GetEntries() {
		nodes = append(nodes, e.GetStatus().GetPublishedNodeIds()...)
	}
	slices.Sort(nodes)
	return nodes
}

// TestCrashExpandControllerAnswered kills `volume expand` once it recorded the expansion as
// pending, before ControllerExpandVolume (expand:intent), and right after ControllerExpandVolume
// answered OK (the storage grown, the node expansion required), before the new size and the owed
// node expansion are recorded. `volume status` says the expansion is pending in between, and
// `volctl reconcile` sends the RPC again (idempotent), records the size the plugin has, and sends
// the node expansion to the claim's target. Before, nothing recorded it: after the second kill
// the volume stayed at the old size in volctl's records, its file system never grown, and no
// command said so.
func TestCrashExpandControllerAnswered(t *testing.T) {
	t.Parallel()
	bin := buildVolctl(t, failpointsTag)
	env, mem, target := newClaimedMemEnv(t)
	status := func(jq string) string { return strings.TrimSpace(env.ok("volume", "status", "vol", "--jq", jq)) }
	externalID := status(".external_id")

	for i, fp := range []string{"expand:intent", "rpc:ControllerExpandVolume"} {
		size := int64(2<<20) << i // 2 MiB, then 4 MiB
		before := int64(1<<20) << i
		env.crash(bin, fp, "volume", "expand", "vol", "--size", strconv.FormatInt(size, 10))
		grown := before
		if fp == "rpc:ControllerExpandVolume" {
			grown = size
		}
		if v, ok := mem.Volume(externalID); !ok || v.CapacityBytes != grown {
			t.Fatalf("killed at %s: the plugin's volume is %+v, want %d bytes", fp, v, grown)
		}
		if got := status("[.capacity_bytes, .expansion_pending // 0] | @csv"); got != fmt.Sprintf("%d,%d", before, size) {
			t.Fatalf("killed at %s: volume status shows capacity, expansion pending = %s, want %d,%d (the expand asked, its answer not recorded)", fp, got, before, size)
		}
		if out := env.ok("volume", "status", "vol"); !strings.Contains(out, "Expansion Pending") || !strings.Contains(out, "volctl reconcile") {
			t.Fatalf("killed at %s: volume status does not say the expansion is pending and what sends it:\n%s", fp, out)
		}
		env.ok("reconcile")
		reqs := csitest.Requests[csi.NodeExpandVolumeRequest](mem)
		if got := status("[.capacity_bytes, .expansion_pending // 0, .node_expansion_owed // 0] | @csv"); got != fmt.Sprintf("%d,0,0", size) ||
			len(reqs) != i+1 || reqs[i].VolumePath != target || reqs[i].CapacityMin != size {
			t.Fatalf("killed at %s, after reconcile: capacity, expansion pending, node expansion owed = %s; NodeExpandVolume %+v; want %d,0,0 and it sent at %s",
				fp, got, reqs, size, target)
		}
		if v, _ := mem.Volume(externalID); v.CapacityBytes != size {
			t.Fatalf("killed at %s, after reconcile: the plugin's volume is %+v, want %d bytes", fp, v, size)
		}
		env.ok("reconcile") // nothing left to do
		if n := len(csitest.Requests[csi.NodeExpandVolumeRequest](mem)); n != i+1 {
			t.Fatalf("killed at %s: a second reconcile sent NodeExpandVolume again (%d sent)", fp, n)
		}
	}
}

// TestCrashSnapshotDelete kills `volume snapshot delete` once it recorded the delete, before
// DeleteSnapshot (snapshot:deleting), and right after DeleteSnapshot answered, before the
// plugin's list was checked and the record forgotten (check:DeleteSnapshot): the record stays,
// a restore from the snapshot is refused naming the delete, and `volctl reconcile` finishes the
// delete as it finishes an interrupted volume delete, leaving neither the snapshot nor a record
// of it; a restore from it is then the plugin's NOT_FOUND, not a refusal. Before, reconcile left
// the recorded delete, and every restore from the snapshot was refused until the user ran the
// same delete again. Snapshots need no mounts, so this runs without mount privileges.
func TestCrashSnapshotDelete(t *testing.T) {
	t.Parallel()
	bin := buildVolctl(t, failpointsTag)
	env := newSnapshotEnv(t)
	find := func(name string) (engine.SnapshotInfo, bool) { s, ok := env.snapshots()[name]; return s, ok }
	for _, fp := range []string{"snapshot:deleting", "check:DeleteSnapshot"} {
		t.Run(fp, func(t *testing.T) {
			env.t = t
			name := "s-" + strings.NewReplacer(":", "-").Replace(fp)
			env.ok("volume", "snapshot", "create", "vol", name)
			s, ok := find(name)
			if !ok || !s.Recorded || !s.Listed {
				t.Fatalf("snapshot after create: %+v (found %v), want recorded and listed", s, ok)
			}
			env.crash(bin, fp, "volume", "snapshot", "delete", "hp", s.ID, "--yes")
			if got, ok := find(name); !ok || !got.Recorded || got.Listed == (fp == "check:DeleteSnapshot") {
				t.Fatalf("after the kill at %s: %+v (found %v), want still recorded, listed only if DeleteSnapshot was not sent", fp, got, ok)
			}
			restore := fromSpec(t, "r-"+name, "snapshot_id", s.ID)
			if out, err := env.run(nil, "volume", "create", restore); err == nil || !strings.Contains(out, "is being deleted") {
				t.Fatalf("restore from snapshot %s whose delete was killed: %v\n%s\nwant it refused naming the delete", s.ID, err, out)
			}
			out := env.ok("reconcile")
			if !strings.Contains(out, s.ID) {
				t.Errorf("reconcile does not say it deleted snapshot %s:\n%s", s.ID, out)
			}
			if got, ok := find(name); ok {
				t.Fatalf("after reconcile: %+v still there; want the delete finished", got)
			}
			if out, err := env.run(nil, "volume", "create", restore); err == nil || strings.Contains(out, "is being deleted") {
				t.Fatalf("restore from the deleted snapshot %s: %v\n%s\nwant the plugin's NOT_FOUND, not a refusal naming a delete", s.ID, err, out)
			}
			env.ok("reconcile")
			env.checkInvariants()
		})
	}
}

// newSnapshotEnv is a hostEnv on a hostpath plugin "hp" that mounts nothing, with a volume
// "vol": what the snapshot crash tests need, without mount privileges.
func newSnapshotEnv(t *testing.T) *hostEnv {
	srv := hostpathtest.Start(t, hostpath.Config{Root: hostpathtest.ShortDir(t), NodeID: "n1", Mounter: &hostpathtest.FakeMounter{}})
	env := &hostEnv{t: t, state: hostpathtest.ShortDir(t), socket: srv.Socket, plugin: srv.Plugin}
	env.ok("plugin", "register", "--id", "hp", "--socket", env.socket)
	env.createVolume("vol", spec.SingleNodeWriter)
	return env
}

// snapshots is `snapshot list --plugin hp`, by name.
func (env *hostEnv) snapshots() map[string]engine.SnapshotInfo {
	var l engine.SnapshotList
	if err := json.Unmarshal([]byte(env.ok("volume", "snapshot", "list", "--plugin", "hp", "--json")), &l); err != nil {
		env.t.Fatal(err)
	}
	out := map[string]engine.SnapshotInfo{}
	for _, s := range l.Snapshots {
		out[s.Name] = s
	}
	return out
}

// nodeExpansionOwed is volume "vol"'s node_expansion_owed as `volume status` shows it, "0"
// when nothing is owed (the field is left out then).
func (env *hostEnv) nodeExpansionOwed() string {
	return strings.TrimSpace(env.ok("volume", "status", "vol", "--jq", ".node_expansion_owed // 0"))
}

// newClaimedMemEnv is a hostEnv on an in-memory plugin "hp" that bind-mounts what it publishes
// (volctl insists on a mount point at the target), with a volume "vol" claimed by alloc "a":
// the plugin and the claim's target. The state dir is a MountDir: whatever is mounted under it
// is unmounted before it is removed.
func newClaimedMemEnv(t *testing.T) (*hostEnv, *csitest.MemPlugin, string) {
	mem := csitest.NewMountingMemPlugin(t, csitest.DefaultMemConfig())
	socket, _ := csitest.Serve(t, csitest.WithServer(mem))
	env := &hostEnv{t: t, state: hostpathtest.MountDir(t), socket: socket}
	env.ok("plugin", "register", "--id", "hp", "--socket", socket)
	env.createVolume("vol", spec.SingleNodeWriter)
	return env, mem, strings.TrimSpace(env.ok("volume", "claim", "vol", "--alloc", "a"))
}

// TestCrashInAGroupScaleDown kills a `group run` that scales a group from 2 allocs to 1 right
// after it recorded the new count, before it released the alloc past it. Reconcile then
// releases that alloc's claims as the scale-down would have: before, they stayed held for good
// (reconcile and claim GC released only a stopped group's claims), web[1]'s single-writer
// volume refused to every other alloc.
func TestCrashInAGroupScaleDown(t *testing.T) {
	t.Parallel()
	env := newHostEnv(t)
	bin := buildVolctl(t, failpointsTag)
	env.createVolume("data[0]", spec.SingleNodeWriter)
	env.createVolume("data[1]", spec.SingleNodeWriter)
	dir := t.TempDir()
	group := func(count int) string {
		path := filepath.Join(dir, fmt.Sprintf("web-%d.hcl", count))
		src := fmt.Sprintf("group \"web\" {\n  count = %d\n  volume \"data\" {\n    type = \"csi\"\n    source = \"data\"\n    per_alloc = true\n"+
			"    access_mode = \"single-node-writer\"\n    attachment_mode = \"file-system\"\n  }\n}\n", count)
		if err := os.WriteFile(path, []byte(src), 0o600); err != nil {
			t.Fatal(err)
		}
		return path
	}
	env.ok("group", "run", group(2))
	env.crash(bin, "group:recorded", "group", "run", group(1))
	if out := env.ok("group", "status", "web"); !strings.Contains(out, "web[1] still holds claims the group (past its count 1) no longer has") ||
		!strings.Contains(out, "`volctl reconcile` releases them") {
		t.Fatalf("after a scale-down killed before it released web[1], group status does not say what releases its claims:\n%s", out)
	}
	env.ok("reconcile")
	env.checkInvariants()
	if out := env.ok("volume", "status", "data[1]", "--json"); strings.Contains(out, `"alloc": "web[1]"`) {
		t.Fatalf("after reconcile, web[1], past the group's count 1, still holds data[1]:\n%s", out)
	}
	env.ok("volume", "claim", "data[1]", "--alloc", "other") // the volume is free for another alloc
	env.ok("volume", "release", "data[1]", "--alloc", "other")
	env.ok("group", "stop", "web")
	env.checkInvariants()
}
