package main

import (
	"encoding/json"
	"fmt"
	"strings"
	"sync"
	"testing"

	"github.com/volctl/volctl/internal/engine"
	"github.com/volctl/volctl/internal/spec"
)

// atOnce runs each command line as its own volctl process, all started together, and returns
// their results in order.
func atOnce(env *hostEnv, cmds ...[]string) []procResult {
	res := make([]procResult, len(cmds))
	start := make(chan struct{})
	var wg sync.WaitGroup
	for i, args := range cmds {
		wg.Add(1)
		go func() {
			defer wg.Done()
			<-start
			res[i] = runScanned(env.volctl(), env.state, args...)
		}()
	}
	close(start)
	wg.Wait()
	return res
}

// settled fails t unless nothing is left half done: reconcile finds nothing to do and the store,
// the mount table and the plugin agree.
func (env *hostEnv) settled(when string) {
	env.t.Helper()
	if res := runScanned(env.volctl(), env.state, "reconcile", "-t", "{{len .actions}} {{len .problems}}"); res.code != 0 || res.stdout != "0 0" || len(res.leaks) > 0 {
		env.t.Fatalf("%s: reconcile found something left half done: exit %d, %q actions and problems %v\n%s", when, res.code, res.stdout, res.leaks, res.stderr)
	}
	env.checkInvariants()
}

// Two processes claim the one writer slot of a multi-node-single-writer volume that two readers
// hold, at once, round after round: one wins, the other is refused (exit 4) naming the winner's
// alloc, and the readers keep their claims.
func TestWriterSlotRaceOnAMultiNodeSingleWriterVolume(t *testing.T) {
	t.Parallel()
	env := newHostEnv(t)
	env.createVolume("mnsw", spec.MultiNodeSingleWriter)
	env.ok("volume", "claim", "mnsw", "--alloc", "r1", "--read-only")
	env.ok("volume", "claim", "mnsw", "--alloc", "r2", "--read-only")
	for round := range 8 {
		allocs := []string{fmt.Sprintf("w%d-a", round), fmt.Sprintf("w%d-b", round)}
		res := atOnce(env, []string{"volume", "claim", "mnsw", "--alloc", allocs[0]}, []string{"volume", "claim", "mnsw", "--alloc", allocs[1]})
		var won, lost []int
		for i, r := range res {
			switch r.code {
			case 0:
				won = append(won, i)
			case 4:
				lost = append(lost, i)
			default:
				t.Fatalf("round %d: claim for %s exited %d:\n%s", round, allocs[i], r.code, r.stderr)
			}
		}
		if len(won) != 1 || len(lost) != 1 {
			t.Fatalf("round %d: %d won, %d refused; want one each:\n%+v", round, len(won), len(lost), res)
		}
		if w, l := allocs[won[0]], res[lost[0]]; !strings.Contains(l.stderr, fmt.Sprintf("alloc %q", w)) || !strings.Contains(l.stderr, `"mnsw"`) {
			t.Fatalf("round %d: the refusal does not name the volume and the writer %q:\n%s", round, w, l.stderr)
		}
		out := env.ok("volume", "status", "mnsw", "--json")
		for _, a := range []string{"r1", "r2", allocs[won[0]]} {
			if !strings.Contains(out, fmt.Sprintf(`"alloc": %q`, a)) {
				t.Fatalf("round %d: alloc %q's claim is gone:\n%s", round, a, out)
			}
		}
		env.settled(fmt.Sprintf("round %d", round))
		env.ok("volume", "release", "mnsw", "--alloc", allocs[won[0]])
	}
}

// A claim and a delete of the same volume from two processes at once: one goes first. The claim
// first: the delete is refused (exit 4) naming the claim's alloc, and the claim is published.
// The delete first: the claim fails naming the volume, and nothing of it is left. Either way
// nothing is half done.
func TestClaimRacingDeleteOfTheVolume(t *testing.T) {
	t.Parallel()
	env := newHostEnv(t)
	outcomes := map[string]int{}
	for round := range 8 {
		vol := fmt.Sprintf("d%d", round)
		env.createVolume(vol, spec.SingleNodeWriter)
		res := atOnce(env, []string{"volume", "claim", vol, "--alloc", "a"}, []string{"volume", "delete", vol, "--yes"})
		claim, del := res[0], res[1]
		switch {
		case claim.code == 0 && del.code == 4:
			if outcomes["claim first"]++; outcomes["claim first"] == 1 {
				t.Logf("the claim first; the delete said: %s", del.stderr)
			}
			if !strings.Contains(del.stderr, `alloc "a"`) || !strings.Contains(del.stderr, fmt.Sprintf("%q", vol)) {
				t.Fatalf("round %d: the refused delete does not name the volume and the claim's alloc:\n%s", round, del.stderr)
			}
			env.settled(fmt.Sprintf("round %d, the claim first", round))
			env.ok("volume", "release", vol, "--alloc", "a")
			env.ok("volume", "delete", vol, "--yes")
		case claim.code != 0 && del.code == 0:
			if outcomes["delete first"]++; outcomes["delete first"] == 1 {
				t.Logf("the delete first; the claim said: %s", claim.stderr)
			}
			if !strings.Contains(claim.stderr, fmt.Sprintf("%q", vol)) {
				t.Fatalf("round %d: the failed claim does not name the volume:\n%s", round, claim.stderr)
			}
			if strings.Contains(claim.stderr, "deleted by another volctl meanwhile") && strings.Contains(claim.stderr, "another user") {
				t.Fatalf("round %d: the claim that waited for the delete sends the user to another state dir:\n%s", round, claim.stderr)
			}
			if _, err := env.run(nil, "volume", "status", vol); err == nil {
				t.Fatalf("round %d: volume %q deleted, and still there", round, vol)
			}
		default:
			t.Fatalf("round %d: claim exit %d, delete exit %d; want one to win and the other refused:\nclaim:\n%s\ndelete:\n%s", round, claim.code, del.code, claim.stderr, del.stderr)
		}
		env.settled(fmt.Sprintf("round %d", round))
	}
	t.Logf("outcomes: %v", outcomes)
}

// A claim and an expand of the same volume from two processes at once: both succeed, in either
// order, and the volume ends at the new size with nothing owed, its claim published.
func TestClaimRacingExpandOfTheVolume(t *testing.T) {
	t.Parallel()
	env := newHostEnv(t)
	env.createVolume("e", spec.SingleNodeWriter)
	for round := range 6 {
		size := fmt.Sprintf("%dMiB", 2+round)
		res := atOnce(env, []string{"volume", "claim", "e", "--alloc", "a"}, []string{"volume", "expand", "e", "--size", size})
		for i, r := range res {
			if r.code != 0 {
				t.Fatalf("round %d: %s exited %d:\n%s", round, []string{"claim", "expand"}[i], r.code, r.stderr)
			}
		}
		got := strings.TrimSpace(env.ok("volume", "status", "e", "--jq", `[.capacity_bytes, (.node_expansion_owed // 0), (.claims | length)] | @csv`))
		if want := fmt.Sprintf("%d,0,1", int64(2+round)<<20); got != want {
			t.Fatalf("round %d: capacity, node expansion owed, claims = %s; want %s", round, got, want)
		}
		env.settled(fmt.Sprintf("round %d", round))
		env.ok("volume", "release", "e", "--alloc", "a")
	}
}

// `group run` and `group stop` of the same group from two processes at once: whichever goes
// second decides, and the group ends running with its alloc's claims published and bound (one
// volume_mount below the other), or
// stopped with no claim; a run overtaken by the stop is refused (exit 4) naming the group and
// the stop, a stop that finds nothing to stop says so naming the group.
func TestGroupRunRacingGroupStop(t *testing.T) {
	t.Parallel()
	env, dest, outer, inner := newNestedEnv(t)
	group := groupWithMounts(t, dest)
	outcomes := map[string]int{}
	for round := range 8 {
		res := atOnce(env, []string{"group", "run", group}, []string{"group", "stop", "web"})
		run, stop := res[0], res[1]
		if run.code != 0 && (run.code != 4 || !strings.Contains(run.stderr, `group "web" was stopped by another volctl`)) {
			t.Fatalf("round %d: group run exited %d, not refused naming the group and the stop:\n%s", round, run.code, run.stderr)
		}
		if stop.code != 0 && !strings.Contains(stop.stderr, `"web"`) {
			t.Fatalf("round %d: group stop exited %d without naming the group:\n%s", round, stop.code, stop.stderr)
		}
		var g engine.GroupInfo
		if err := json.Unmarshal([]byte(env.ok("group", "status", "web", "--json")), &g); err != nil {
			t.Fatal(err)
		}
		claims := env.groupClaims()
		switch {
		case g.State == "running" && len(claims) == 2:
			outcomes["running"]++
			env.checkBound(outer, inner)
		case g.State == "stopped" && len(claims) == 0:
			outcomes["stopped"]++
		default:
			t.Fatalf("round %d: group %s with claims %+v: half done\nrun:\n%s\nstop:\n%s", round, g.State, claims, run.stderr, stop.stderr)
		}
		env.settled(fmt.Sprintf("round %d", round))
		if res := runScanned(env.volctl(), env.state, "group", "stop", "web"); res.code != 0 && !strings.Contains(res.stderr, `"web"`) {
			t.Fatalf("round %d: group stop: exit %d\n%s", round, res.code, res.stderr)
		}
	}
	t.Logf("outcomes: %v", outcomes)
}

// A release and a reconcile of the same claim, left on its way by a killed claim or a killed
// release, from two processes at once: the release wins whichever holds the volume first (reconcile publishing it
// before, or finding it gone after), and nothing is left.
func TestReleaseRacingReconcileOfTheClaim(t *testing.T) {
	t.Parallel()
	env := newHostEnv(t)
	bin := buildVolctl(t, failpointsTag)
	env.createVolume("vol", spec.SingleNodeWriter)
	for round, fp := range []string{"claim:taken", "claim:controller-published", "claim:node-staged", "rpc:NodePublishVolume",
		"release:unpublishing", "rpc:NodeUnpublishVolume", "release:node-detached", "rpc:ControllerUnpublishVolume"} {
		if strings.HasPrefix(fp, "claim:") || fp == "rpc:NodePublishVolume" {
			env.crash(bin, fp, "volume", "claim", "vol", "--alloc", "a")
		} else {
			env.ok("volume", "claim", "vol", "--alloc", "a")
			env.crash(bin, fp, "volume", "release", "vol", "--alloc", "a")
		}
		res := atOnce(env, []string{"volume", "release", "vol", "--alloc", "a"}, []string{"reconcile"})
		if res[0].code != 0 {
			t.Fatalf("round %d (%s): release exited %d:\n%s", round, fp, res[0].code, res[0].stderr)
		}
		if res[1].code != 0 {
			t.Fatalf("round %d (%s): reconcile exited %d:\n%s%s", round, fp, res[1].code, res[1].stdout, res[1].stderr)
		}
		if out := env.ok("volume", "status", "vol", "--json"); strings.Contains(out, `"alloc": "a"`) {
			t.Fatalf("round %d (%s): the released claim is still there:\n%s", round, fp, out)
		}
		env.settled(fmt.Sprintf("round %d (%s)", round, fp))
	}
}
