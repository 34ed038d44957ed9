package hostpath

import (
	"context"
	"io/fs"
	"maps"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/container-storage-interface/spec/lib/go/csi"
)

// syncEvent is one sync the plugin made: of what (a file, or with fs the file system holding
// it), how many records were on disk then, the names volumes/ and snapshots/ held then, and for
// a file system's sync, the size of each file under the root then (-1 for a directory).
type syncEvent struct {
	path    string
	fs      bool
	records int
	placed  []string // "volumes/ID" and "snapshots/ID" present at the sync
	tree    map[string]int64
}

// recordCopySyncs replaces syncFile and syncFS for the test with ones that log each sync
// (syncEvent).
func recordCopySyncs(t *testing.T, root string) *[]syncEvent {
	t.Helper()
	var log []syncEvent
	oldFile, oldFS := syncFile, syncFS
	t.Cleanup(func() { syncFile, syncFS = oldFile, oldFS })
	syncFile = func(f *os.File) error {
		log = append(log, syncEvent{path: f.Name(), records: countRecords(t, root), placed: placedDirs(root)})
		return oldFile(f)
	}
	syncFS = func(f *os.File) error {
		tree := map[string]int64{}
		_ = filepath.WalkDir(root, func(path string, d fs.DirEntry, err error) error {
			if err == nil {
				if fi, ierr := d.Info(); ierr == nil && d.IsDir() {
					tree[path] = -1
				} else if ierr == nil && fi.Mode().IsRegular() {
					tree[path] = fi.Size()
				}
			}
			return nil
		})
		log = append(log, syncEvent{path: f.Name(), fs: true, records: countRecords(t, root), placed: placedDirs(root), tree: tree})
		return oldFS(f)
	}
	return &log
}

// countRecords is how many volume and snapshot records root's meta holds.
func countRecords(t *testing.T, root string) int {
	n := 0
	for _, kind := range []string{"volumes", "snapshots"} {
		m, err := filepath.Glob(filepath.Join(root, metaDir, kind, "*.json"))
		if err != nil {
			t.Fatal(err)
		}
		n += len(m)
	}
	return n
}

// placedDirs lists the volume and snapshot directories under root as "KIND/ID".
func placedDirs(root string) []string {
	var out []string
	for _, kind := range []string{"volumes", "snapshots"} {
		ents, _ := os.ReadDir(filepath.Join(root, kind))
		for _, e := range ents {
			out = append(out, kind+"/"+e.Name())
		}
	}
	return out
}

// copyRel is rel when path is root/KIND/ID/REL (final) or root/partial/copy-XXX/data/REL (the
// copy before its rename), "." for the directory itself.
func copyRel(root, final, path string) (string, bool) {
	if rel, err := filepath.Rel(final, path); err == nil && !strings.HasPrefix(rel, "..") {
		return rel, true
	}
	if rel, err := filepath.Rel(filepath.Join(root, "partial"), path); err == nil && !strings.HasPrefix(rel, "..") {
		if parts := strings.SplitN(rel, string(filepath.Separator), 3); len(parts) >= 2 && parts[1] == "data" {
			if len(parts) == 3 {
				return parts[2], true
			}
			return ".", true
		}
	}
	return "", false
}

// wantDurableBeforeRecorded fails unless every directory and regular file of root/KIND/ID (the
// directory a create just put in place, with records records on disk before it) was on disk
// before its record was written: synced itself, at its path there or in the partial copy
// renamed there, or its file system synced once it was there whole (its final size); and
// unless root/KIND was synced with KIND/ID in it, before the record too. Without that, a power
// loss after the plugin answered may leave the record, durable, naming a copy whose files are
// empty or partial, or no directory at all: a snapshot that restores as nothing.
func wantDurableBeforeRecorded(t *testing.T, root string, log []syncEvent, records int, kind, id string) {
	t.Helper()
	final := filepath.Join(root, kind, id)
	want := map[string]int64{} // rel -> size, -1 for a directory
	err := filepath.WalkDir(final, func(path string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		rel, _ := filepath.Rel(final, path)
		switch fi, err := d.Info(); {
		case err != nil:
			return err
		case d.IsDir():
			want[rel] = -1
		case fi.Mode().IsRegular():
			want[rel] = fi.Size()
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	synced := map[string]bool{} // rel of the copy, on disk before the record
	parentSynced := false
	for _, ev := range log {
		if ev.records != records {
			continue
		}
		placed := slices.Contains(ev.placed, kind+"/"+id)
		if ev.path == filepath.Join(root, kind) && placed || ev.fs && placed {
			parentSynced = true
		}
		if rel, ok := copyRel(root, final, ev.path); ok && !ev.fs {
			synced[rel] = true
		}
		for path, size := range ev.tree {
			if rel, ok := copyRel(root, final, path); ok && want[rel] == size {
				synced[rel] = true
			}
		}
	}
	for _, rel := range slices.Sorted(maps.Keys(want)) {
		if !synced[rel] {
			t.Errorf("%s (%s of %s) was not synced before its record was written: a power loss may leave it empty or gone under a record that says it is there",
				filepath.Join(final, rel), rel, id)
		}
	}
	if !parentSynced {
		t.Errorf("%s was not synced with %s in it before its record was written: a power loss may leave the record naming no directory", filepath.Join(root, kind), id)
	}
}

// TestCopiesAndNewVolumesAreOnDiskBeforeTheirRecords: a snapshot, a volume restored from it, a
// clone and a new empty volume are synced (each file and directory, and the directory it was
// put in) before the record that says they exist. Before, a copy's files were written and
// renamed into place unsynced, under a record written durably (atomicfile): a power cut in the
// next seconds, with the orchestrator told the snapshot was taken, left a snapshot of empty
// files.
func TestCopiesAndNewVolumesAreOnDiskBeforeTheirRecords(t *testing.T) {
	root := t.TempDir()
	p, err := New(Config{Root: root, NodeID: "n1"})
	if err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	snw := &csi.VolumeCapability{AccessMode: &csi.VolumeCapability_AccessMode{Mode: csi.VolumeCapability_AccessMode_SINGLE_NODE_WRITER},
		AccessType: &csi.VolumeCapability_Mount{Mount: &csi.VolumeCapability_MountVolume{}}}
	create := func(name string, src *csi.VolumeContentSource) string {
		t.Helper()
		resp, err := p.CreateVolume(ctx, &csi.CreateVolumeRequest{Name: name, VolumeCapabilities: []*csi.VolumeCapability{snw},
			CapacityRange: &csi.CapacityRange{RequiredBytes: 1 << 20}, VolumeContentSource: src})
		if err != nil {
			t.Fatalf("CreateVolume %q: %v", name, err)
		}
		return resp.GetVolume().GetVolumeId()
	}

	log := recordCopySyncs(t, root)
	before := countRecords(t, root)
	src := create("src", nil)
	wantDurableBeforeRecorded(t, root, *log, before, "volumes", src)

	dir := p.volumePath(src)
	for _, d := range []string{"a", "a/b"} {
		if err := os.Mkdir(filepath.Join(dir, d), 0o755); err != nil {
			t.Fatal(err)
		}
	}
	for _, f := range []string{"top", "a/mid", "a/b/deep"} {
		if err := os.WriteFile(filepath.Join(dir, f), []byte(strings.Repeat(f, 4096)), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	if err := os.Symlink("a/mid", filepath.Join(dir, "link")); err != nil {
		t.Fatal(err)
	}

	*log, before = nil, countRecords(t, root)
	sresp, err := p.CreateSnapshot(ctx, &csi.CreateSnapshotRequest{Name: "s", SourceVolumeId: src})
	if err != nil {
		t.Fatal(err)
	}
	snap := sresp.GetSnapshot().GetSnapshotId()
	wantDurableBeforeRecorded(t, root, *log, before, "snapshots", snap)

	*log, before = nil, countRecords(t, root)
	restored := create("restored", &csi.VolumeContentSource{Type: &csi.VolumeContentSource_Snapshot{
		Snapshot: &csi.VolumeContentSource_SnapshotSource{SnapshotId: snap}}})
	wantDurableBeforeRecorded(t, root, *log, before, "volumes", restored)

	*log, before = nil, countRecords(t, root)
	clone := create("clone", &csi.VolumeContentSource{Type: &csi.VolumeContentSource_Volume{
		Volume: &csi.VolumeContentSource_VolumeSource{VolumeId: src}}})
	wantDurableBeforeRecorded(t, root, *log, before, "volumes", clone)
}
