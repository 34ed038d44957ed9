package main

import (
	"context"
	"encoding/binary"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"

	"github.com/volctl/volctl/internal/csi/csitest"
	"github.com/volctl/volctl/internal/spec"
	"github.com/volctl/volctl/internal/store"
)

// A volctl command exits without closing the state database (Factory.CloseAtExit): SQLite's
// checkpoint at the last close, its fsyncs and the WAL's deletion are left out, and the next
// command reads the WAL back. The WAL stays bounded (store's wal_autocheckpoint: without it the
// WAL grows to SQLite's default of 1000 pages, 4 MiB, read back at every open) and nothing
// committed is lost.
//
// How many claims and releases it takes: enough for the WAL to have been checkpointed and
// restarted from its start (its header's checkpoint sequence number moves, checked below) and
// for the commits to have written more than the 1 MiB the WAL must stay under, so that a WAL
// never checkpointed (wal_autocheckpoint back at SQLite's 1000 pages) fails the bound. A cycle
// writes about 40 pages (160 KiB; the registration and the create before it, 220 KiB): ten
// of them and those write 1.8 MiB, and that mutation fails here with a WAL of 1,870,512 bytes,
// never restarted, while the store as it is restarts it four times. Each cycle is two processes:
// more of them prove nothing more (it was 40 cycles, 4 MiB).
func TestCommandsLeaveTheWALToTheNext(t *testing.T) {
	t.Parallel()
	bin := buildVolctl(t)
	socket, _ := csitest.Serve(t, csitest.WithServer(csitest.NewMountingMemPlugin(t, csitest.DefaultMemConfig())))
	env := &hostEnv{t: t, state: t.TempDir(), socket: socket}
	run := func(args ...string) {
		t.Helper()
		if out, err := env.runBinary(bin, nil, args...); err != nil {
			t.Fatalf("volctl %s: %v\n%s", strings.Join(args, " "), err, out)
		}
	}
	wal := filepath.Join(env.state, store.FileName+"-wal")
	run("plugin", "register", "--id", "hp", "--socket", socket)
	if fi, err := os.Stat(wal); err != nil || fi.Size() == 0 {
		t.Fatalf("after volctl plugin register exited, its WAL %s: %v (size %d); the command should leave it to the next one", wal, err, sizeOf(fi))
	}
	run("volume", "create", writeVolumeSpec(t, "v", spec.SingleNodeWriter))
	first := walCheckpoints(t, wal)
	const cycles = 10 // see above
	for i := range cycles {
		run("volume", "claim", "v", "--alloc", "a")
		run("volume", "release", "v", "--alloc", "a")
		fi, _ := os.Stat(wal)
		t.Logf("cycle %d: WAL %d bytes, checkpoint sequence %d", i, sizeOf(fi), walCheckpoints(t, wal))
	}
	// 100 pages of 4 KiB and their frame headers, plus the commit that crossed the mark, well
	// under 1 MiB; SQLite's default of 1000 pages would let it pass 4 MiB.
	if fi, err := os.Stat(wal); err != nil || fi.Size() > 1<<20 {
		t.Errorf("after %d claims and releases the WAL %s is %d bytes (%v): it should be checkpointed at %d KiB or so", cycles, wal, sizeOf(fi), err, 400)
	}
	if last := walCheckpoints(t, wal); last == first {
		t.Errorf("after %d claims and releases the WAL %s was never checkpointed and restarted (checkpoint sequence %d throughout): it should be, every %d KiB or so", cycles, wal, first, 400)
	}
	st, err := store.Open(context.Background(), env.state)
	if err != nil {
		t.Fatal(err)
	}
	defer st.Close()
	err = st.View(context.Background(), func(tx *store.Tx) error {
		live, err := tx.Claims().ListAll()
		if err != nil {
			return err
		}
		past, err := tx.History("v", 0)
		if err != nil {
			return err
		}
		if _, err := tx.Volumes().Get("v"); err != nil {
			return err
		}
		if len(live) != 0 || len(past) != cycles {
			t.Errorf("after %d claims and releases: %d live claims and %d in the history, want 0 and %d", cycles, len(live), len(past), cycles)
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
}

// walCheckpoints reads the checkpoint sequence number of the WAL's header (bytes 12 to 16, big
// endian): SQLite adds one each time a writer restarts the WAL from its start after a
// checkpoint copied all of it into the database.
func walCheckpoints(t *testing.T, wal string) uint32 {
	t.Helper()
	f, err := os.Open(wal)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	var hdr [16]byte
	if _, err := io.ReadFull(f, hdr[:]); err != nil {
		t.Fatalf("the header of the WAL %s: %v", wal, err)
	}
	return binary.BigEndian.Uint32(hdr[12:])
}

func sizeOf(fi os.FileInfo) int64 {
	if fi == nil {
		return -1
	}
	return fi.Size()
}

// The first process to open the state database after a command exited reads the WAL back
// (SQLite's recovery). That process may be a read command, and others may race it for the first
// open: readers (status, volume status, plugin status, whose probe writes on the side) and a
// writer, started together right after a writer exited. Every one must succeed; the -wal and
// -shm files the exit left stay 0600.
func TestReadCommandsFirstToOpenAfterAWriterExited(t *testing.T) {
	t.Parallel()
	bin := buildVolctl(t)
	socket, _ := csitest.Serve(t, csitest.WithServer(csitest.NewMountingMemPlugin(t, csitest.DefaultMemConfig())))
	env := &hostEnv{t: t, state: t.TempDir(), socket: socket}
	run := func(args ...string) (string, error) {
		return env.runBinary(bin, nil, args...)
	}
	must := func(args ...string) {
		t.Helper()
		if out, err := run(args...); err != nil {
			t.Fatalf("volctl %s: %v\n%s", strings.Join(args, " "), err, out)
		}
	}
	must("plugin", "register", "--id", "hp", "--socket", socket)
	must("volume", "create", writeVolumeSpec(t, "v", spec.SingleNodeWriter))
	must("volume", "create", writeVolumeSpec(t, "w", spec.SingleNodeWriter))
	readers := [][]string{
		{"status"}, {"volume", "status", "v"}, {"plugin", "status", "hp"}, {"volume", "status", "v", "--json"},
		{"status", "--json"}, {"plugin", "status", "hp", "--json"},
	}
	for round := range 5 {
		alloc := fmt.Sprintf("a%d", round)
		must("volume", "claim", "v", "--alloc", alloc) // the writer that exits, leaving its WAL
		for _, suffix := range []string{"-wal", "-shm"} {
			if fi, err := os.Stat(filepath.Join(env.state, store.FileName+suffix)); err != nil || fi.Mode().Perm() != 0o600 {
				t.Fatalf("round %d: %s%s after a writer exited: %v (mode %v), want it left, 0600", round, store.FileName, suffix, err, modeOf(fi))
			}
		}
		var wg sync.WaitGroup
		errs := make([]string, len(readers)+1)
		for i, args := range readers {
			wg.Add(1)
			go func() {
				defer wg.Done()
				if out, err := run(args...); err != nil {
					errs[i] = fmt.Sprintf("volctl %s: %v\n%s", strings.Join(args, " "), err, out)
				} else if args[0] == "volume" && !strings.Contains(out, alloc) {
					errs[i] = fmt.Sprintf("volctl %s does not show the claim of %s just made:\n%s", strings.Join(args, " "), alloc, out)
				}
			}()
		}
		wg.Add(1)
		go func() { // a writer racing the readers for the first open
			defer wg.Done()
			if out, err := run("volume", "claim", "w", "--alloc", alloc); err != nil {
				errs[len(readers)] = fmt.Sprintf("volctl volume claim w: %v\n%s", err, out)
			}
		}()
		wg.Wait()
		for _, e := range errs {
			if e != "" {
				t.Errorf("round %d, the first processes to open after a writer exited: %s", round, e)
			}
		}
		must("volume", "release", "v", "--alloc", alloc)
		must("volume", "release", "w", "--alloc", alloc)
	}
}

func modeOf(fi os.FileInfo) os.FileMode {
	if fi == nil {
		return 0
	}
	return fi.Mode().Perm()
}
