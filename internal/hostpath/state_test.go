package hostpath

import (
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"golang.org/x/sys/unix"
)

// Record IDs have the shape the plugin generates.
var (
	volA  = "vol-" + strings.Repeat("a", 2*idRandomBytes)
	volB  = "vol-" + strings.Repeat("b", 2*idRandomBytes)
	snapA = "snap-" + strings.Repeat("c", 2*idRandomBytes)
)

// TestStateIsOneFilePerObject: a change rewrites only the record it touches, and deleting an
// object removes its record.
func TestStateIsOneFilePerObject(t *testing.T) {
	root := t.TempDir()
	st := newState()
	st.Volumes[volA] = &volume{ID: volA, Name: "a", Capacity: 1, CreatedAt: time.Unix(1, 0).UTC()}
	st.Volumes[volB] = &volume{ID: volB, Name: "b", Capacity: 2, CreatedAt: time.Unix(2, 0).UTC()}
	for _, id := range []string{volA, volB} {
		if err := st.saveVolume(root, id); err != nil {
			t.Fatal(err)
		}
	}
	b := filepath.Join(root, metaDir, "volumes", volB+".json")
	before, err := os.Stat(b)
	if err != nil {
		t.Fatal(err)
	}
	st.Volumes[volA].Capacity = 10
	if err := st.saveVolume(root, volA); err != nil {
		t.Fatal(err)
	}
	if after, _ := os.Stat(b); !os.SameFile(before, after) {
		t.Error("saving vol-a rewrote vol-b's record")
	}
	delete(st.Volumes, volB)
	if err := st.saveVolume(root, volB); err != nil {
		t.Fatal(err)
	}
	got, err := loadState(root)
	if err != nil {
		t.Fatal(err)
	}
	if len(got.Volumes) != 1 || got.Volumes[volA].Capacity != 10 {
		t.Fatalf("loaded %+v", got.Volumes)
	}
}

// TestLegacyStateIsMigrated: a version 1 state.json is split into per-object records and
// removed; what it held survives.
func TestLegacyStateIsMigrated(t *testing.T) {
	root := t.TempDir()
	legacy := fmt.Sprintf(`{"version": 1,
	  "volumes": {%[1]q: {"id": %[1]q, "name": "a", "capacity_bytes": 5, "created_at": "2026-01-01T00:00:00Z",
	                      "attachments": {"n1": {"token": "t"}}}},
	  "snapshots": {%[2]q: {"id": %[2]q, "name": "s", "source_volume": %[1]q, "size_bytes": 5, "created_at": "2026-01-01T00:00:00Z"}}}`,
		volA, snapA)
	if err := os.WriteFile(filepath.Join(root, legacyStateFile), []byte(legacy), 0o600); err != nil {
		t.Fatal(err)
	}
	st, err := loadState(root)
	if err != nil {
		t.Fatal(err)
	}
	if v := st.Volumes[volA]; v == nil || v.Attachments["n1"].Token != "t" || st.Snapshots[snapA] == nil {
		t.Fatalf("migrated state = %+v %+v", st.Volumes, st.Snapshots)
	}
	if _, err := os.Stat(filepath.Join(root, legacyStateFile)); !os.IsNotExist(err) {
		t.Fatalf("state.json not removed: %v", err)
	}
	again, err := loadState(root)
	if err != nil || again.Volumes[volA] == nil || again.Snapshots[snapA] == nil {
		t.Fatalf("reloaded after migration: %+v, %v", again, err)
	}
	// A record with a foreign ID is refused, not followed.
	if err := os.WriteFile(filepath.Join(root, metaDir, "volumes", "vol-..json"), []byte(`{}`), 0o600); err != nil {
		t.Fatal(err)
	}
	if _, err := loadState(root); err == nil {
		t.Fatal("a malformed record name was accepted")
	}
}

// TestFailedSaveIsWrittenAgain: a record is skipped only when its bytes are the ones known to
// be on disk. A save that failed, perhaps after its rename, leaves the disk unknown: the next
// save writes, even when the record is back to what was last written.
func TestFailedSaveIsWrittenAgain(t *testing.T) {
	root := t.TempDir()
	st := newState()
	st.Volumes[volA] = &volume{ID: volA, Name: "a", Capacity: 1, CreatedAt: time.Unix(1, 0).UTC()}
	if err := st.saveVolume(root, volA); err != nil {
		t.Fatal(err)
	}
	dir := filepath.Join(root, metaDir, "volumes")
	record := filepath.Join(dir, volA+".json")
	if err := os.Rename(dir, dir+".away"); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(dir, nil, 0o600); err != nil { // no directory to write into
		t.Fatal(err)
	}
	st.Volumes[volA].Capacity = 2
	if err := st.saveVolume(root, volA); err == nil {
		t.Fatal("saving into a missing directory succeeded")
	}
	if err := os.Remove(dir); err != nil {
		t.Fatal(err)
	}
	if err := os.Rename(dir+".away", dir); err != nil {
		t.Fatal(err)
	}
	// As if that save's rename had happened before its failure: the disk has the new record.
	b, err := json.Marshal(st.Volumes[volA])
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(record, b, 0o600); err != nil {
		t.Fatal(err)
	}
	st.Volumes[volA].Capacity = 1 // the RPC's undo
	if err := st.saveVolume(root, volA); err != nil {
		t.Fatal(err)
	}
	got, err := loadState(root)
	if err != nil {
		t.Fatal(err)
	}
	if c := got.Volumes[volA].Capacity; c != 1 {
		t.Errorf("record on disk has capacity %d after saving capacity 1: the save after a failed one was skipped", c)
	}
}

// TestDeletedThenRecreatedVolumeIsWritten: a volume deleted and created again under the same ID
// with the same fields marshals to the bytes last written for it; its record was removed in
// between, so the save must write it, or the plugin would forget the volume at its next start.
// A temp file a torn write left behind is not taken for a record either.
func TestDeletedThenRecreatedVolumeIsWritten(t *testing.T) {
	root := t.TempDir()
	st := newState()
	v := volume{ID: volA, Name: "a", Capacity: 1, CreatedAt: time.Unix(1, 0).UTC()}
	save := func() {
		t.Helper()
		if err := st.saveVolume(root, volA); err != nil {
			t.Fatal(err)
		}
	}
	st.Volumes[volA] = &v
	save()
	delete(st.Volumes, volA)
	save()
	again := v
	st.Volumes[volA] = &again
	save()
	// A torn write's leftovers: a temp file with half a record.
	if err := os.WriteFile(filepath.Join(root, metaDir, "volumes", ".tmp-1.json"), []byte(`{"id":`), 0o600); err != nil {
		t.Fatal(err)
	}
	got, err := loadState(root)
	if err != nil {
		t.Fatal(err)
	}
	if g := got.Volumes[volA]; g == nil || g.Name != "a" {
		t.Fatalf("after deleting volume %s and creating it again, the plugin reads back %+v; want the volume", volA, g)
	}
}

// TestTeardownSaveOnAFullRoot: a teardown's save on a full root writes the record into a slot
// of the reserve and exchanges the names, the old record's file that slot after, the other
// slots kept; where the names cannot be exchanged (a file system without RENAME_EXCHANGE), it
// gives slots of the reserve up and saves again. Either way the record on disk is the new one,
// and nothing else is left in meta/volumes.
func TestTeardownSaveOnAFullRoot(t *testing.T) {
	if os.Geteuid() != 0 {
		t.Skip("needs root, to mount a small tmpfs")
	}
	for _, exchange := range []bool{true, false} {
		t.Run(fmt.Sprintf("exchange=%v", exchange), func(t *testing.T) {
			root := t.TempDir()
			if err := unix.Mount("tmpfs", root, "tmpfs", 0, "size=1m,mode=0700"); err != nil {
				t.Skipf("cannot mount a tmpfs: %v", err)
			}
			t.Cleanup(func() { _ = unix.Unmount(root, unix.MNT_DETACH) })
			if !exchange {
				old := exchangeNames
				t.Cleanup(func() { exchangeNames = old })
				exchangeNames = func(string, string) error { return unix.EINVAL }
			}
			st := newState()
			st.Volumes[volA] = &volume{ID: volA, Name: "a", Capacity: 1, CreatedAt: time.Unix(1, 0).UTC(),
				Targets: map[string]publication{"/alloc/a": {}}}
			if err := st.saveVolume(root, volA); err != nil {
				t.Fatal(err)
			}
			if err := keepReserve(root); err != nil {
				t.Fatal(err)
			}
			record := filepath.Join(root, metaDir, "volumes", volA+".json")
			before, err := os.Stat(record)
			if err != nil {
				t.Fatal(err)
			}
			fill(t, filepath.Join(root, "fill"))
			delete(st.Volumes[volA].Targets, "/alloc/a")
			if err := st.saveTeardown(root, volA); err != nil {
				t.Fatalf("teardown's save on a full root: %v", err)
			}
			got, err := loadState(root)
			if err != nil {
				t.Fatal(err)
			}
			if n := len(got.Volumes[volA].Targets); n != 0 {
				t.Errorf("record on disk has %d targets after the teardown's save, want 0", n)
			}
			slots, oldRecord := 0, false
			for _, slot := range reserveSlots {
				if fi, err := os.Stat(filepath.Join(root, metaDir, slot.name)); err == nil {
					slots++
					oldRecord = oldRecord || os.SameFile(fi, before)
				}
			}
			switch {
			case exchange && !oldRecord:
				t.Error("no slot of the reserve after a save into it is the old record's file")
			case exchange && slots != len(reserveSlots):
				t.Errorf("%d slots of the reserve after a save into one, want all %d kept", slots, len(reserveSlots))
			case !exchange && slots == len(reserveSlots):
				t.Error("every slot of the reserve is there after a save that could not use it: none given up?")
			}
			entries, err := os.ReadDir(filepath.Join(root, metaDir, "volumes"))
			if err != nil {
				t.Fatal(err)
			}
			if len(entries) != 1 {
				t.Errorf("meta/volumes holds %d entries, want the one record", len(entries))
			}
		})
	}
}

// fill allocates every free block of path's file system to the file path, in one fallocate.
func fill(t *testing.T, path string) {
	t.Helper()
	var st unix.Statfs_t
	if err := unix.Statfs(filepath.Dir(path), &st); err != nil {
		t.Fatal(err)
	}
	f, err := os.Create(path)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	if err := unix.Fallocate(int(f.Fd()), 0, 0, int64(st.Bavail)*st.Bsize); err != nil {
		t.Fatalf("filling %s: %v", path, err)
	}
	if err := unix.Statfs(filepath.Dir(path), &st); err != nil || st.Bavail != 0 {
		t.Fatalf("%s's file system has %d blocks free after filling it (%v)", path, st.Bavail, err)
	}
}

// TestTeardownSavesOfTwoProcessesShareTheReserve: two plugin processes serving one full root
// write their teardowns' records into meta/.reserve and exchange names with it, while a third
// gives the reserve up and makes it again: every record read back is whole, its own volume's,
// and the last one saved. The reserve is used, given up and made only under its lock, and each
// checks that the file locked is still the one its name holds.
func TestTeardownSavesOfTwoProcessesShareTheReserve(t *testing.T) {
	if os.Geteuid() != 0 {
		t.Skip("needs root, to mount a small tmpfs")
	}
	root := t.TempDir()
	if err := unix.Mount("tmpfs", root, "tmpfs", 0, "size=1m,mode=0700"); err != nil {
		t.Skipf("cannot mount a tmpfs: %v", err)
	}
	t.Cleanup(func() { _ = unix.Unmount(root, unix.MNT_DETACH) })
	ids := []string{volA, volB}
	states := make([]*state, len(ids))
	for i, id := range ids {
		states[i] = newState()
		states[i].Volumes[id] = &volume{ID: id, Name: id, Capacity: 1, CreatedAt: time.Unix(1, 0).UTC(), Targets: map[string]publication{}}
		if err := states[i].saveVolume(root, id); err != nil {
			t.Fatal(err)
		}
	}
	if err := keepReserve(root); err != nil {
		t.Fatal(err)
	}
	fill(t, filepath.Join(root, "fill"))
	const rounds = 200
	done := make(chan struct{})
	go func() { // the third process: gives the reserve up and takes it again
		defer close(done)
		for range rounds {
			giveUpReserve(root)
			_ = keepReserve(root)
		}
	}()
	errs := make(chan error, len(ids))
	for i, id := range ids {
		go func() {
			st := states[i]
			for n := range rounds {
				target := fmt.Sprintf("/alloc/%d", n%2)
				st.Volumes[id].Targets = map[string]publication{target: {}}
				saved := st.saveTeardown(root, id)
				if saved != nil && !errors.Is(saved, unix.ENOSPC) {
					errs <- fmt.Errorf("%s: save %d: %w", id, n, saved)
					return
				}
				got, err := os.ReadFile(filepath.Join(root, metaDir, "volumes", id+".json"))
				if err != nil {
					errs <- err
					return
				}
				var v volume
				if err := json.Unmarshal(got, &v); err != nil || v.ID != id {
					errs <- fmt.Errorf("%s: record after save %d is not its own, whole: %q (%v)", id, n, got, err)
					return
				}
				if _, ok := v.Targets[target]; saved == nil && !ok {
					errs <- fmt.Errorf("%s: record after save %d is not the one saved: %s", id, n, got)
					return
				}
			}
			errs <- nil
		}()
	}
	for range ids {
		if err := <-errs; err != nil {
			t.Error(err)
		}
	}
	<-done
}

// TestVersionLeftEmptyByAPowerLossIsNoRefusal: meta/VERSION was written in place and never
// synced, so a power loss after the first save left it empty beside the records, and the
// plugin refused its root at every start after ("version , this volctl reads version 2").
// An empty VERSION is read as none, and the next first save of a kind writes it whole.
func TestVersionLeftEmptyByAPowerLossIsNoRefusal(t *testing.T) {
	root := t.TempDir()
	st := newState()
	st.Volumes[volA] = &volume{ID: volA, Name: "a", Capacity: 1, CreatedAt: time.Unix(1, 0).UTC()}
	if err := st.saveVolume(root, volA); err != nil {
		t.Fatal(err)
	}
	version := filepath.Join(root, metaDir, versionFile)
	if b, err := os.ReadFile(version); err != nil || strings.TrimSpace(string(b)) != fmt.Sprint(stateVersion) {
		t.Fatalf("VERSION after the first save = %q, %v", b, err)
	}
	if err := os.WriteFile(version, nil, 0o600); err != nil { // what the power loss left
		t.Fatal(err)
	}
	got, err := loadState(root)
	if err != nil {
		t.Fatalf("a root whose VERSION a power loss emptied was refused: %v", err)
	}
	if got.Volumes[volA] == nil {
		t.Fatalf("loaded %+v", got.Volumes)
	}
	got.Snapshots[snapA] = &snapshot{ID: snapA, Name: "s", SourceVolume: volA, CreatedAt: time.Unix(1, 0).UTC()}
	if err := got.saveSnapshot(root, snapA); err != nil {
		t.Fatal(err)
	}
	if b, err := os.ReadFile(version); err != nil || strings.TrimSpace(string(b)) != fmt.Sprint(stateVersion) {
		t.Fatalf("VERSION after the next first save = %q, %v", b, err)
	}
	// A version another plugin wrote is still refused.
	if err := os.WriteFile(version, []byte("99\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	if _, err := loadState(root); err == nil || !strings.Contains(err.Error(), "version 99") {
		t.Fatalf("version 99 read as: %v", err)
	}
}
