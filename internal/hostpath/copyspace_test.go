package hostpath_test

import (
	"bytes"
	"context"
	"os"
	"path/filepath"
	"syscall"
	"testing"

	"github.com/container-storage-interface/spec/lib/go/csi"

	"github.com/volctl/volctl/internal/hostpath"
	"github.com/volctl/volctl/internal/hostpath/hostpathtest"
)

// A volume's consumer makes, in a volume of a few megabytes, a file of a gibibyte's size that
// is a hole but for a few bytes (truncate -s 1G), and names a file of 3 MiB nine times (ln):
// the volume takes 3 MiB. Its snapshot, and a volume restored from that, take 3 MiB each too,
// on a root of 16 MiB: the holes stay holes, the names are names of one copy. Before, the copy
// wrote the holes as zeros and each name as a file of its own, and the snapshot failed on the
// full root ("copy_file_range: no space left on device"), every other volume's consumer and the
// plugin's own records out of room meanwhile; on a root of terabytes, it wrote terabytes.
func TestCopyTakesNoMoreRoomThanItsSource(t *testing.T) {
	root := hostpathtest.Tmpfs(t, "size=16m,mode=0700")
	c := start(t, hostpath.Config{Root: root})
	ctx := context.Background()
	v := c.createVolume(t, "v")
	dir := c.volumeDir(t, v.GetVolumeId())

	const sparseSize, mark = 1 << 30, "data amid the holes"
	f, err := os.Create(filepath.Join(dir, "sparse"))
	mustOK(t, err)
	_, err = f.WriteAt([]byte(mark), sparseSize/2)
	mustOK(t, err)
	mustOK(t, f.Truncate(sparseSize))
	mustOK(t, f.Close())
	data := bytes.Repeat([]byte("0123456789abcdef"), 3*mib/16)
	mustOK(t, os.WriteFile(filepath.Join(dir, "data"), data, 0o640))
	mustOK(t, os.Mkdir(filepath.Join(dir, "sub"), 0o755))
	names := []string{"data", "sub/data"}
	mustOK(t, os.Link(filepath.Join(dir, "data"), filepath.Join(dir, "sub/data")))
	for _, n := range []string{"a", "b", "c", "d", "e", "f", "g"} {
		mustOK(t, os.Link(filepath.Join(dir, "data"), filepath.Join(dir, "data."+n)))
		names = append(names, "data."+n)
	}

	snap, err := c.ctl.CreateSnapshot(ctx, &csi.CreateSnapshotRequest{Name: "s", SourceVolumeId: v.GetVolumeId()})
	if err != nil {
		t.Fatalf("CreateSnapshot of a volume of 3 MiB on a root of 16 MiB: %v", err)
	}
	snapDir, ok := c.srv.Plugin.SnapshotPath(snap.GetSnapshot().GetSnapshotId())
	if !ok {
		t.Fatal("the snapshot has no directory")
	}
	req := createReq("restored", 0)
	req.VolumeContentSource = &csi.VolumeContentSource{Type: &csi.VolumeContentSource_Snapshot{
		Snapshot: &csi.VolumeContentSource_SnapshotSource{SnapshotId: snap.GetSnapshot().GetSnapshotId()}}}
	restored, err := c.ctl.CreateVolume(ctx, req)
	if err != nil {
		t.Fatalf("CreateVolume from the snapshot on a root of 16 MiB: %v", err)
	}

	for _, copyDir := range []string{snapDir, c.volumeDir(t, restored.GetVolume().GetVolumeId())} {
		sparse := filepath.Join(copyDir, "sparse")
		fi, err := os.Stat(sparse)
		mustOK(t, err)
		if st := fi.Sys().(*syscall.Stat_t); fi.Size() != sparseSize || st.Blocks*512 > mib {
			t.Errorf("%s: %d bytes in %d bytes of blocks, want %d bytes in at most a MiB: its holes not kept", sparse, fi.Size(), st.Blocks*512, sparseSize)
		}
		got := make([]byte, len(mark)+2)
		g, err := os.Open(sparse)
		mustOK(t, err)
		_, err = g.ReadAt(got, sparseSize/2-1)
		g.Close()
		mustOK(t, err)
		if want := "\x00" + mark + "\x00"; string(got) != want {
			t.Errorf("%s at %d: %q, want %q", sparse, sparseSize/2-1, got, want)
		}
		first, err := os.Stat(filepath.Join(copyDir, "data"))
		mustOK(t, err)
		for _, n := range names {
			path := filepath.Join(copyDir, n)
			fi, err := os.Stat(path)
			mustOK(t, err)
			if !os.SameFile(fi, first) {
				t.Errorf("%s is a file of its own, where the source's %s is a name of data", path, n)
			}
			if b, err := os.ReadFile(path); err != nil || !bytes.Equal(b, data) || fi.Mode().Perm() != 0o640 {
				t.Errorf("%s: %d bytes, mode %v, %v; want data's %d bytes, mode 0640", path, len(b), fi.Mode().Perm(), err, len(data))
			}
		}
	}
}
