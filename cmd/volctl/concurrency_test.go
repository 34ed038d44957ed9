package main

import (
	"bytes"
	"context"
	"errors"
	"flag"
	"fmt"
	"math/rand/v2"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/moby/sys/mountinfo"

	"github.com/volctl/volctl/internal/spec"
	"github.com/volctl/volctl/internal/store"
)

// 10 s: with its processes built without -race (shortVolctl) they run about 200 commands, where
// 20 s of race-built ones ran about 110 (2026-12-02, idle 2-core VM).
var concurrencyFor = flag.Duration("concurrency", 10*time.Second,
	"how long TestConcurrentClaims keeps its processes going (-short: 4s); raise it for a soak run")

// concurrentVolumes are the volumes the processes fight over: one per access mode, so that
// every rule of admission is exercised.
var concurrentVolumes = []struct {
	id   string
	mode spec.AccessMode
}{
	{"snw", spec.SingleNodeWriter},
	{"snro", spec.SingleNodeReaderOnly},
	{"mnro", spec.MultiNodeReaderOnly},
	{"mnsw", spec.MultiNodeSingleWriter},
	{"mnmw", spec.MultiNodeMultiWriter},
}

// leakWords must never reach a user: SQLite's lock contention is volctl's to absorb (the busy
// timeout, retried BEGIN and COMMIT), not something to print. Matched case-insensitively, so
// "busy" also catches SQLITE_BUSY and "device or resource busy".
var leakWords = []string{"database is locked", "sqlite_busy", "busy"}

// TestConcurrentClaims runs 16 volctl processes at a time doing random claims, releases,
// status reads, reconciles and detaches on five volumes (one per access mode, read and write claims, real mounts through
// the built-in plugin with controller attach) for a bounded time. Meanwhile a checker samples
// the store and the kernel's mount table and asserts what must hold at every instant; at the end
// reconcile must find nothing to do, the store and the mount table must agree, and releasing
// every claim must leave no mount, staging or attachment behind. Every process must exit 0 or 4
// (a conflict: the access mode refused the claim, or the alloc already holds another kind of
// claim); exit 1 is never expected here, since the plugin is healthy and nothing is killed, so
// any runtime error is a bug. No process may print a word of SQLite lock contention.
func TestConcurrentClaims(t *testing.T) {
	t.Parallel()
	env := newHostEnv(t)
	for _, v := range concurrentVolumes {
		env.createVolume(v.id, v.mode)
	}
	st, err := store.Open(context.Background(), env.state)
	if err != nil {
		t.Fatal(err)
	}
	defer st.Close()

	dur := *concurrencyFor
	if testing.Short() && dur > 4*time.Second {
		dur = 4 * time.Second
	}
	const workers = 16
	var (
		stats   = newOpStats()
		stop    = make(chan struct{})
		checked = make(chan int)
		wg      sync.WaitGroup
	)
	go func() { checked <- sampleInvariants(t, st, env.state, stop) }()
	deadline := time.Now().Add(dur)
	for w := range workers {
		wg.Add(1)
		go func() {
			defer wg.Done()
			rng := rand.New(rand.NewPCG(uint64(time.Now().UnixNano()), uint64(w)))
			for time.Now().Before(deadline) && !t.Failed() {
				op, args := randomOp(rng)
				res := runScanned(env.volctl(), env.state, args...)
				stats.add(op, res)
				checkOp(t, op, args, res)
			}
		}()
	}
	wg.Wait()
	close(stop)
	samples := <-checked
	t.Logf("%d processes in %v, %d invariant samples; %s", stats.total(), dur, samples, stats)
	if t.Failed() {
		return
	}
	for _, op := range []string{"claim", "release"} {
		if stats.count(op, 0) == 0 {
			t.Errorf("no %s succeeded: the run tested nothing", op)
		}
	}
	if stats.count("claim", 4) == 0 {
		t.Error("no claim was refused: the volumes were never contended")
	}

	// Nothing is left half done, so reconcile has nothing to repair.
	if res := runScanned(env.volctl(), env.state, "reconcile", "-t", "{{len .actions}} {{len .problems}}"); res.code != 0 || res.stdout != "0 0" || len(res.leaks) > 0 {
		t.Fatalf("reconcile after the run: exit %d, %q actions and problems %v\n%s", res.code, res.stdout, res.leaks, res.stderr)
	}
	env.checkInvariants()

	// Releasing every claim leaves nothing behind: no mount, no staging, no attachment.
	claims := liveClaims(t, st)
	for _, c := range claims {
		args := []string{"volume", "release", c.VolumeID, "--alloc", c.Alloc}
		if res := runScanned(env.volctl(), env.state, args...); res.code != 0 || len(res.leaks) > 0 {
			t.Errorf("volctl %s: exit %d %v\n%s", strings.Join(args, " "), res.code, res.leaks, res.stderr)
		}
	}
	env.checkInvariants()
	if left := liveClaims(t, st); len(left) > 0 {
		t.Errorf("%d claims left after releasing all %d", len(left), len(claims))
	}
	// The plugin refuses to delete a volume still attached or mounted anywhere: deleting each
	// one is the plugin's own word that nothing of it was left behind.
	for _, v := range concurrentVolumes {
		args := []string{"volume", "delete", v.id, "--yes"}
		if res := runScanned(env.volctl(), env.state, args...); res.code != 0 || len(res.leaks) > 0 {
			t.Errorf("volctl %s: exit %d %v\n%s", strings.Join(args, " "), res.code, res.leaks, res.stderr)
		}
	}
	env.checkInvariants()
}

// randomOp picks what one process does: claim (read-only where the mode demands it, else at
// random), release, read the status, reconcile (as the agent does every minute, beside the
// commands) or detach a volume; on a random volume for one of six allocs, so allocs meet each
// other on every volume and an alloc meets its own claims, its releases in flight among them.
func randomOp(rng *rand.Rand) (string, []string) {
	v := concurrentVolumes[rng.IntN(len(concurrentVolumes))]
	alloc := fmt.Sprintf("a%d", rng.IntN(6))
	switch n := rng.IntN(22); {
	case n < 9:
		args := []string{"volume", "claim", v.id, "--alloc", alloc}
		if v.mode.ReaderOnly() || rng.IntN(2) == 0 {
			args = append(args, "--read-only")
		}
		return "claim", args
	case n < 17:
		return "release", []string{"volume", "release", v.id, "--alloc", alloc}
	case n < 20:
		return "status", [][]string{
			{"status"}, {"volume", "status"}, {"volume", "status", v.id, "--json"}, {"status", v.id},
		}[rng.IntN(4)]
	case n == 20:
		return "reconcile", []string{"reconcile"}
	default:
		return "detach", []string{"volume", "detach", v.id, "--yes"}
	}
}

// checkOp holds one process to what its operation may answer.
func checkOp(t *testing.T, op string, args []string, res procResult) {
	t.Helper()
	fail := func(why string) {
		t.Errorf("volctl %s: %s (exit %d)\nstdout:\n%sstderr:\n%s", strings.Join(args, " "), why, res.code, res.stdout, res.stderr)
	}
	if len(res.leaks) > 0 {
		fail(fmt.Sprintf("printed %q", res.leaks))
	}
	switch {
	case res.code == 0:
		if op == "claim" && !strings.HasPrefix(strings.TrimSpace(res.stdout), "/") {
			fail("a claim that succeeded must print its target path")
		}
	case res.code == 4 && op == "claim":
		if !strings.Contains(res.stderr, "alloc ") {
			fail("a refused claim must name the alloc in the way")
		}
		// Nothing is killed and the plugin is healthy: every release ends, so a claim that
		// meets its alloc's release in flight waits for it rather than send the user to
		// reconcile beside it.
		if strings.Contains(res.stderr, "volctl reconcile") {
			fail("a claim refused naming reconcile, with no operation interrupted")
		}
	default:
		fail("unexpected exit status")
	}
}

// sampleInvariants checks, until stop is closed, what must hold at every instant while the
// processes run, and returns how many samples it took. Each sample reads the store (S1), the
// kernel's mount table (M), and the store again (S2, with the recent claim history):
//   - S1 and S2 each obey the access modes (accessModeViolations);
//   - in M alone: nothing is mounted twice on one path, every published target has its volume's
//     staging mounted under it, and a volume's targets, told apart by their <ro|rw> usage
//     directory, are no more than its mode admits (single-node: one; reader-only: no writer;
//     multi-node-single-writer: one writer);
//   - M against the store: a mounted target belongs to a claim live in S1 or S2, or freed since
//     S1 began (the claim row outlives its mount on both paths); and a claim published and not
//     releasing, unchanged from S1 to S2, is mounted in M, since it was published throughout.
//
// M is read in several read(2) calls while mounts come and go. Since Linux 5.8 each call goes on
// after the last mount the previous one returned (not after a count of entries, which skipped
// one when an earlier mount went away), so a mount present for the whole read is always seen
// and none is seen twice; the checks above rely on nothing more.
func sampleInvariants(t *testing.T, st *store.Store, state string, stop <-chan struct{}) int {
	ctx := context.Background()
	publishRoot := filepath.Join(state, "publish") + "/"
	modes := map[string]spec.AccessMode{}
	for _, v := range concurrentVolumes {
		modes[v.id] = v.mode
	}
	failures := 0
	report := func(format string, args ...any) {
		if failures++; failures <= 20 {
			t.Errorf("invariant broken while running: "+format, args...)
		}
	}
	read := func(history bool) (vols []store.Volume, claims []store.Claim, past []store.PastClaim) {
		err := st.View(ctx, func(tx *store.Tx) error {
			var err error
			if vols, err = tx.Volumes().List(store.VolumeFilter{}); err != nil {
				return err
			}
			if claims, err = tx.Claims().ListAll(); err != nil {
				return err
			}
			if history {
				past, err = tx.History("", historyWindow)
			}
			return err
		})
		if err != nil {
			report("reading the store: %v", err)
		}
		return vols, claims, past
	}
	samples := 0
	for {
		select {
		case <-stop:
			return samples
		case <-time.After(10 * time.Millisecond):
		}
		samples++
		began := time.Now().Add(-time.Millisecond)
		vols1, claims1, _ := read(false)
		mounts, err := mountinfo.GetMounts(mountinfo.PrefixFilter(state))
		if err != nil {
			report("reading the mount table: %v", err)
			continue
		}
		vols2, claims2, past := read(true)
		for _, p := range accessModeViolations(vols1, claims1) {
			report("%s", p)
		}
		for _, p := range accessModeViolations(vols2, claims2) {
			report("%s", p)
		}

		mounted := map[string]int{}
		for _, m := range mounts {
			mounted[m.Mountpoint]++
		}
		type usage struct{ readers, writers int }
		perVolume := map[string]*usage{}
		for mp, n := range mounted {
			if n > 1 {
				report("%s is mounted %d times", mp, n)
			}
			rel, ok := strings.CutPrefix(mp, publishRoot)
			if !ok {
				continue
			}
			parts := strings.Split(rel, "/")
			if len(parts) != 3 {
				report("unexpected mount %s under the publish dir", mp)
				continue
			}
			vol, use := parts[1], parts[2]
			if mounted[filepath.Join(state, "staging", "hp", vol)] == 0 {
				report("target %s is mounted but volume %q is not staged", mp, vol)
			}
			u := perVolume[vol]
			if u == nil {
				u = &usage{}
				perVolume[vol] = u
			}
			if strings.HasPrefix(use, "ro-") {
				u.readers++
			} else {
				u.writers++
			}
			if !accountedFor(mp, began, claims1, claims2, past) {
				report("target %s is mounted but no claim accounts for it", mp)
			}
		}
		for vol, u := range perVolume {
			switch mode := modes[vol]; {
			case mode == "":
				report("a target of unknown volume %q is mounted", vol)
			case (mode == spec.SingleNodeWriter || mode == spec.SingleNodeReaderOnly) && u.readers+u.writers > 1:
				report("%s volume %q is mounted on %d targets", mode, vol, u.readers+u.writers)
			case mode.ReaderOnly() && u.writers > 0:
				report("%s volume %q is mounted on %d writable targets", mode, vol, u.writers)
			case mode == spec.MultiNodeSingleWriter && u.writers > 1:
				report("%s volume %q is mounted on %d writable targets", mode, vol, u.writers)
			}
		}
		before := map[int64]store.Claim{}
		for _, c := range claims1 {
			before[c.ID] = c
		}
		for _, c := range claims2 {
			b, ok := before[c.ID]
			if ok && publishedAtRest(b) && publishedAtRest(c) && b.UpdatedAt.Equal(c.UpdatedAt) && mounted[c.TargetPath] == 0 {
				report("claim %q/%q was published throughout but %s is not mounted", c.VolumeID, c.Alloc, c.TargetPath)
			}
		}
	}
}

// historyWindow is how many freed claims a sample reads back: far more than can be freed in
// the few milliseconds between its two reads.
const historyWindow = 200

func publishedAtRest(c store.Claim) bool { return c.State == store.ClaimPublished && !c.Releasing }

// accountedFor reports whether a target mounted between two reads of the store belongs to a
// claim that was live in between: live in either read, or freed after the first began.
func accountedFor(target string, began time.Time, claims1, claims2 []store.Claim, past []store.PastClaim) bool {
	live := func(c store.Claim) bool { return c.TargetPath == target }
	if slices.ContainsFunc(claims1, live) || slices.ContainsFunc(claims2, live) {
		return true
	}
	for _, p := range past {
		if p.TargetPath == target && !p.FreedAt.Before(began) {
			return true
		}
	}
	// If even the oldest freed claim read back is recent, older ones were cut off: no verdict.
	return len(past) == historyWindow && !past[len(past)-1].FreedAt.Before(began)
}

func liveClaims(t *testing.T, st *store.Store) []store.Claim {
	t.Helper()
	var claims []store.Claim
	if err := st.View(context.Background(), func(tx *store.Tx) error {
		var err error
		claims, err = tx.Claims().ListAll()
		return err
	}); err != nil {
		t.Fatal(err)
	}
	return claims
}

// procResult is one volctl process: its exit status, its output, and any words of lock
// contention (leakWords) it printed.
type procResult struct {
	code           int
	stdout, stderr string
	leaks          []string
}

// runScanned runs volctl on a state dir and scans both its streams for leakWords.
func runScanned(bin, state string, args ...string) procResult {
	cmd := exec.Command(bin, args...)
	cmd.Env = append(os.Environ(), "VOLCTL_STATE_DIR="+state, "NO_COLOR=1")
	var stdout, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	err := cmd.Run()
	res := procResult{stdout: stdout.String(), stderr: stderr.String()}
	var ee *exec.ExitError
	switch {
	case errors.As(err, &ee):
		res.code = ee.ExitCode()
	case err != nil:
		res.code, res.stderr = -1, err.Error()
	}
	all := strings.ToLower(res.stdout + res.stderr)
	for _, w := range leakWords {
		if strings.Contains(all, w) {
			res.leaks = append(res.leaks, w)
		}
	}
	return res
}

// opStats counts processes by operation and exit status, for the log.
type opStats struct {
	mu sync.Mutex
	n  map[string]map[int]int
}

func newOpStats() *opStats { return &opStats{n: map[string]map[int]int{}} }

func (s *opStats) add(op string, res procResult) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.n[op] == nil {
		s.n[op] = map[int]int{}
	}
	s.n[op][res.code]++
}

func (s *opStats) count(op string, code int) int {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.n[op][code]
}

func (s *opStats) total() int {
	s.mu.Lock()
	defer s.mu.Unlock()
	n := 0
	for _, codes := range s.n {
		for _, c := range codes {
			n += c
		}
	}
	return n
}

func (s *opStats) String() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	var parts []string
	for _, op := range []string{"claim", "release", "status", "reconcile", "detach"} {
		var codes []string
		for code, n := range s.n[op] {
			codes = append(codes, fmt.Sprintf("exit %d: %d", code, n))
		}
		slices.Sort(codes)
		parts = append(parts, fmt.Sprintf("%s (%s)", op, strings.Join(codes, ", ")))
	}
	return strings.Join(parts, "; ")
}
