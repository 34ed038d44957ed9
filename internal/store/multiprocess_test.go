package store

import (
	"bufio"
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"os/exec"
	"strconv"
	"strings"
	"testing"
)

// The multi-process test re-runs this test binary as child processes; these variables tell a
// child what to do.
const (
	childEnv      = "VOLCTL_STORE_CHILD"      // the child's index
	childDirEnv   = "VOLCTL_STORE_CHILD_DIR"  // the shared state directory
	childItersEnv = "VOLCTL_STORE_CHILD_ITER" // write iterations per child
)

// procs is the number of writer processes; 8 by default, more by hand (-procs=16).
var procs = flag.Int("procs", 8, "writer processes in TestMultiProcessWriters")

const (
	// Under the race detector SQLite (transpiled C) runs many times slower; fewer iterations
	// keep the test quick while still interleaving hundreds of transactions.
	itersNormal = 150
	itersRace   = 40
)

// Several OS processes (not goroutines: each has its own SQLite connections and file locks) open
// the same, not yet existing, database at the same moment and then write to it as fast as they
// can, read-modify-write on one shared row included. None may see SQLITE_BUSY or "database is
// locked", and every write must land.
func TestMultiProcessWriters(t *testing.T) {
	if testing.Short() {
		t.Skip("spawns 8 processes doing hundreds of transactions; skipped in -short")
	}
	t.Parallel()
	children := *procs
	iters := itersNormal
	if raceEnabled {
		iters = itersRace
	}
	dir := t.TempDir() + "/state" // does not exist: the children race to create it

	type child struct {
		cmd   *exec.Cmd
		start io.WriteCloser
		out   strings.Builder
	}
	var kids []*child
	for i := range children {
		c := &child{cmd: exec.Command(os.Args[0], "-test.run=^TestMultiProcessChild$", "-test.count=1", "-test.v")}
		c.cmd.Env = append(os.Environ(), childEnv+"="+strconv.Itoa(i), childDirEnv+"="+dir, childItersEnv+"="+strconv.Itoa(iters))
		c.cmd.Stdout, c.cmd.Stderr = &c.out, &c.out
		var err error
		if c.start, err = c.cmd.StdinPipe(); err != nil {
			t.Fatal(err)
		}
		if err := c.cmd.Start(); err != nil {
			t.Fatal(err)
		}
		kids = append(kids, c)
	}
	t.Cleanup(func() {
		for _, c := range kids {
			if c.cmd.ProcessState == nil {
				c.cmd.Process.Kill()
				c.cmd.Wait()
			}
		}
	})
	// Every child blocks reading stdin; closing the pipes starts them together.
	for _, c := range kids {
		c.start.Close()
	}

	var writes, reads, busy int
	for i, c := range kids {
		err := c.cmd.Wait()
		out := c.out.String()
		if err != nil {
			t.Errorf("child %d: %v\n%s", i, err, out)
			continue
		}
		var w, r, b int
		found := false
		sc := bufio.NewScanner(strings.NewReader(out))
		for sc.Scan() {
			if _, err := fmt.Sscanf(strings.TrimSpace(sc.Text()), "RESULT writes=%d reads=%d busy=%d", &w, &r, &b); err == nil {
				found = true
			}
		}
		if !found {
			t.Errorf("child %d printed no result:\n%s", i, out)
		}
		writes, reads, busy = writes+w, reads+r, busy+b
	}
	t.Logf("%d processes: %d write transactions, %d read transactions, %d lock errors", children, writes, reads, busy)
	if busy != 0 {
		t.Errorf("children saw %d lock errors, want 0", busy)
	}
	if t.Failed() {
		return
	}

	s, err := Open(context.Background(), dir)
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	total := children * iters
	view(t, s, func(tx *Tx) error {
		v, err := tx.Volumes().Get("shared")
		if err != nil {
			return err
		}
		if v.CapacityBytes != int64(total) {
			t.Errorf("shared counter = %d, want %d: read-modify-write lost updates", v.CapacityBytes, total)
		}
		live, err := tx.Claims().ByVolume("shared")
		if err != nil {
			return err
		}
		past, err := tx.History("shared", 0)
		if err != nil {
			return err
		}
		if len(live)+len(past) != total || len(past) != total/2 {
			t.Errorf("claims: %d live + %d freed, want %d in all, %d freed", len(live), len(past), total, total/2)
		}
		evs, err := tx.Events().Recent(0, EventFilter{})
		if err != nil {
			return err
		}
		if len(evs) != total {
			t.Errorf("events = %d, want %d", len(evs), total)
		}
		return nil
	})
	if want := children*iters*3/2 + children; writes != want {
		t.Errorf("children committed %d write transactions, want %d", writes, want)
	}
}

// TestMultiProcessChild is one writer of TestMultiProcessWriters; run directly it does nothing.
func TestMultiProcessChild(t *testing.T) {
	idx := os.Getenv(childEnv)
	if idx == "" {
		t.Skip("run as a child process by TestMultiProcessWriters")
	}
	iters, err := strconv.Atoi(os.Getenv(childItersEnv))
	if err != nil {
		t.Fatal(err)
	}
	io.Copy(io.Discard, os.Stdin) // the start signal: the parent closes our stdin

	var writes, reads, busy int
	lockErr := func(err error) bool {
		if err == nil {
			return false
		}
		msg := err.Error()
		if errors.Is(err, ErrBusy) || strings.Contains(msg, "database is locked") || strings.Contains(msg, "SQLITE_BUSY") ||
			strings.Contains(msg, "SQLITE_LOCKED") {
			busy++
		}
		return true
	}
	defer func() { fmt.Printf("RESULT writes=%d reads=%d busy=%d\n", writes, reads, busy) }()

	ctx := context.Background()
	s, err := Open(ctx, os.Getenv(childDirEnv))
	if lockErr(err) {
		t.Fatalf("child %s: open: %v", idx, err)
	}
	defer s.Close()
	err = s.Update(ctx, func(tx *Tx) error {
		if _, err := tx.Volumes().Get("shared"); !errors.Is(err, ErrNotFound) {
			return err
		}
		return tx.Volumes().Insert(&Volume{ID: "shared", PluginID: "hp", State: VolumeReady})
	})
	if lockErr(err) {
		t.Fatalf("child %s: create shared volume: %v", idx, err)
	}
	writes++

	var mine []int64
	for i := range iters {
		var c Claim
		err := s.Update(ctx, func(tx *Tx) error {
			v, err := tx.Volumes().Get("shared")
			if err != nil {
				return err
			}
			v.CapacityBytes++
			if err := tx.Volumes().Update(&v); err != nil {
				return err
			}
			c = Claim{VolumeID: "shared", Alloc: fmt.Sprintf("c%s-%d", idx, i), Mode: ClaimRead, State: ClaimTaken}
			if err := tx.Claims().Insert(&c); err != nil {
				return err
			}
			c.State, c.TargetPath = ClaimPublished, "/t/"+c.Alloc
			if err := tx.Claims().Update(&c); err != nil {
				return err
			}
			return tx.Events().Append(&Event{Kind: "claim", VolumeID: "shared", Alloc: c.Alloc})
		})
		if lockErr(err) {
			t.Fatalf("child %s: write %d: %v", idx, i, err)
		}
		writes++
		mine = append(mine, c.ID)

		if i%2 == 1 {
			id := mine[0]
			mine = mine[1:]
			if err := s.Update(ctx, func(tx *Tx) error { return tx.Claims().Free(id, OutcomeReleased) }); lockErr(err) {
				t.Fatalf("child %s: free claim %d: %v", idx, id, err)
			}
			writes++
		}

		err = s.View(ctx, func(tx *Tx) error {
			if _, err := tx.Claims().ByVolume("shared"); err != nil {
				return err
			}
			_, err := tx.Events().Recent(10, EventFilter{})
			return err
		})
		if lockErr(err) {
			t.Fatalf("child %s: read %d: %v", idx, i, err)
		}
		reads++
	}
}
