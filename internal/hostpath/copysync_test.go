package hostpath

import (
	"context"
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/container-storage-interface/spec/lib/go/csi"
)

// syncEvent is one sync the plugin made: of what, how many records were on disk then, and the
// names volumes/ and snapshots/ held then.
type syncEvent struct {
	path    string
	records int
	placed  []string // "volumes/ID" and "snapshots/ID" present at the sync
}

// recordCopySyncs replaces syncFile for the test with one that logs each sync (syncEvent).
func recordCopySyncs(t *testing.T, root string) *[]syncEvent {
	t.Helper()
	var log []syncEvent
	old := syncFile
	t.Cleanup(func() { syncFile = old })
	syncFile = func(f *os.File) error {
		log = append(log, syncEvent{path: f.Name(), records: countRecords(t, root), placed: placedDirs(root)})
		return old(f)
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

// wantDurableBeforeRecorded fails unless every directory and regular file of root/KIND/ID (the
// directory a create just put in place, with records records on disk before it) was synced
// before its record was written: at its path there, or in the partial copy renamed there; and
// unless root/KIND was synced with KIND/ID in it, before the record too. Without that, a power
// loss after the plugin answered may leave the record, durable, naming a copy whose files
// are empty or partial, or no directory at all: a snapshot that restores as nothing.
func wantDurableBeforeRecorded(t *testing.T, root string, log []syncEvent, records int, kind, id string) {
	t.Helper()
	final := filepath.Join(root, kind, id)
	synced := map[string]bool{} // rel of the copy, synced before the record
	parentSynced := false
	for _, ev := range log {
		if ev.records != records {
			continue
		}
		if ev.path == filepath.Join(root, kind) && slices.Contains(ev.placed, kind+"/"+id) {
			parentSynced = true
		}
		if rel, err := filepath.Rel(final, ev.path); err == nil && !strings.HasPrefix(rel, "..") {
			synced[rel] = true
		}
		if rel, err := filepath.Rel(filepath.Join(root, "partial"), ev.path); err == nil && !strings.HasPrefix(rel, "..") {
			// partial/copy-XXX/data/REL
			if parts := strings.SplitN(rel, string(filepath.Separator), 3); len(parts) >= 2 && parts[1] == "data" {
				r := "."
				if len(parts) == 3 {
					r = parts[2]
				}
				synced[r] = true
			}
		}
	}
	err := filepath.WalkDir(final, func(path string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if !d.IsDir() && !d.Type().IsRegular() {
			return nil
		}
		rel, _ := filepath.Rel(final, path)
		if !synced[rel] {
			t.Errorf("%s (%s of %s) was not synced before its record was written: a power loss may leave it empty or gone under a record that says it is there", path, rel, id)
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
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
