package hostpath

import (
	"bytes"
	"context"
	"encoding/binary"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/container-storage-interface/spec/lib/go/csi"
	"golang.org/x/sys/unix"
)

// pluginWithOneVolume is a plugin on a fresh root with one volume, "v", and that volume's directory.
func pluginWithOneVolume(t *testing.T) (p *Plugin, root, volID, volDir string) {
	t.Helper()
	root = t.TempDir()
	p, err := New(Config{Root: root, NodeID: "n1"})
	if err != nil {
		t.Fatal(err)
	}
	snw := &csi.VolumeCapability{AccessMode: &csi.VolumeCapability_AccessMode{Mode: csi.VolumeCapability_AccessMode_SINGLE_NODE_WRITER},
		AccessType: &csi.VolumeCapability_Mount{Mount: &csi.VolumeCapability_MountVolume{}}}
	resp, err := p.CreateVolume(context.Background(), &csi.CreateVolumeRequest{Name: "v", VolumeCapabilities: []*csi.VolumeCapability{snw},
		CapacityRange: &csi.CapacityRange{RequiredBytes: 1 << 20}})
	if err != nil {
		t.Fatal(err)
	}
	volID = resp.GetVolume().GetVolumeId()
	return p, root, volID, p.volumePath(volID)
}

// posixACL is the system.posix_acl_access value of user::rw-, user:uid:rw-, group::---,
// mask::rw-, other::--- (what `setfacl -m u:UID:rw` makes of a file of mode 0600).
func posixACL(uid uint32) []byte {
	const undefined = 0xffffffff
	entries := []struct {
		tag, perm uint16
		id        uint32
	}{{0x01, 6, undefined}, {0x02, 6, uid}, {0x04, 0, undefined}, {0x10, 6, undefined}, {0x20, 0, undefined}}
	b := binary.LittleEndian.AppendUint32(nil, 2)
	for _, e := range entries {
		b = binary.LittleEndian.AppendUint16(b, e.tag)
		b = binary.LittleEndian.AppendUint16(b, e.perm)
		b = binary.LittleEndian.AppendUint32(b, e.id)
	}
	return b
}

// A consumer shares one file of its volume with one more user through a POSIX ACL
// (setfacl -m u:4242:rw secret, on a file of mode 0600): the file's owning group has no access
// (group::---), and its mode's group bits show the ACL's mask, rw, as POSIX has them do. The
// snapshot copies the mode and drops the ACL: in the snapshot, and every volume restored from
// it, the owning group may read and write the secret (mode 0660, no ACL to say otherwise).
// Found by helper review66.
func TestSnapshotOfAFileWithAnACLDoesNotGiveItsGroupTheMask(t *testing.T) {
	p, _, volID, dir := pluginWithOneVolume(t)
	secret := filepath.Join(dir, "secret")
	if err := os.WriteFile(secret, []byte("the consumer's secret"), 0o600); err != nil {
		t.Fatal(err)
	}
	if err := os.Chown(secret, 1000, 1000); err != nil {
		t.Fatal(err)
	}
	acl := posixACL(4242)
	if err := unix.Setxattr(secret, "system.posix_acl_access", acl, 0); err != nil {
		if errors.Is(err, unix.EOPNOTSUPP) {
			t.Skipf("the file system under %s has no POSIX ACLs: %v", dir, err)
		}
		t.Fatal(err)
	}
	var st unix.Stat_t
	if err := unix.Stat(secret, &st); err != nil {
		t.Fatal(err)
	}
	if st.Mode&0o777 != 0o660 {
		t.Fatalf("the source's mode is %#o with its ACL, want 0660 (the group bits showing the mask)", st.Mode&0o777)
	}

	resp, err := p.CreateSnapshot(context.Background(), &csi.CreateSnapshotRequest{Name: "s", SourceVolumeId: volID})
	if err != nil {
		t.Fatal(err)
	}
	copied := filepath.Join(p.snapshotPath(resp.GetSnapshot().GetSnapshotId()), "secret")
	var cst unix.Stat_t
	if err := unix.Stat(copied, &cst); err != nil {
		t.Fatal(err)
	}
	buf := make([]byte, 256)
	n, xerr := unix.Getxattr(copied, "system.posix_acl_access", buf)
	switch {
	case xerr == nil && bytes.Equal(buf[:n], acl):
		// the ACL kept: its group::--- still rules the group.
	case cst.Mode&0o070 != 0:
		t.Errorf("the snapshot's copy of %s (group %d, which the source's ACL gives no access: group::---) has mode %#o and ACL %v: "+
			"the owning group may read and write what the consumer shared with user 4242 alone", secret, cst.Gid, cst.Mode&0o7777, xattrState(buf[:max(n, 0)], xerr))
	}
}

func xattrState(b []byte, err error) string {
	if err != nil {
		return "none (" + err.Error() + ")"
	}
	return "another one"
}

// A consumer appends to a log while a snapshot copies it: the copy's last SEEK_DATA, from the end
// it had copied to, finds no more data (ENXIO), then the consumer appends, then the copy looks at
// the file's size for the copy's. The copy has the new size with zeros where the appended
// bytes are: bytes the file never held at any moment. A file cut short is copied "as far as its
// data reached"; a file grown should be too (or hold what was appended), not a tail of NULs
// that a log or a database's journal reads as corruption.
// Found by helper review66.
func TestFileGrownWhileCopiedHoldsNoZerosItNeverHad(t *testing.T) {
	dir := t.TempDir()
	src, dst := filepath.Join(dir, "log"), filepath.Join(dir, "copy")
	first := bytes.Repeat([]byte("line of the log\n"), 1024)
	appended := []byte("a line appended while the copy ran\n")
	if err := os.WriteFile(src, first, 0o644); err != nil {
		t.Fatal(err)
	}
	w, err := os.OpenFile(src, os.O_WRONLY|os.O_APPEND, 0)
	if err != nil {
		t.Fatal(err)
	}
	defer w.Close()
	in, err := os.Open(src)
	if err != nil {
		t.Fatal(err)
	}
	defer in.Close()
	out, err := os.Create(dst)
	if err != nil {
		t.Fatal(err)
	}
	defer out.Close()

	old := seekFile
	t.Cleanup(func() { seekFile = old })
	grew := 0
	seekFile = func(fd int, off int64, whence int) (int64, error) {
		n, err := old(fd, off, whence)
		if whence == unix.SEEK_DATA && errors.Is(err, unix.ENXIO) && grew == 0 {
			grew++ // the consumer's write lands between this seek and the copy's look at the size
			if _, werr := w.Write(appended); werr != nil {
				t.Fatal(werr)
			}
		}
		return n, err
	}
	if err := copyData(context.Background(), in, out); err != nil {
		t.Fatal(err)
	}
	if grew != 1 {
		t.Fatal("the copy never reached the end of the file: the test appended nothing")
	}
	got, err := os.ReadFile(dst)
	if err != nil {
		t.Fatal(err)
	}
	if !bytes.Equal(got, first) && !bytes.Equal(got, append(append([]byte{}, first...), appended...)) {
		tail := got[min(len(first), len(got)):]
		t.Errorf("the copy holds %d bytes, want the %d copied (or %d with the line appended); the %d past the copied ones are %q, bytes the file never held",
			len(got), len(first), len(first)+len(appended), len(tail), tail)
	}
}

// A consumer holds a write lease (fcntl F_SETLEASE, F_WRLCK; a file's owner may take one, as
// Samba does) on a file of its volume and ignores the SIGIO the kernel sends when another
// opens the file. The copy's open of it for reading waits for the lease's break, 45 s
// (/proc/sys/fs/lease-break-time) a file, whatever the request's context says: copyTree "stops
// early when ctx is done", but not inside that open, and a consumer with a lease on each of
// many files holds a snapshot (and its name, and its source volume's delete) for hours.
// Found by helper review66.
func TestCopyStopsWhenItsRequestEndsThoughAFileIsLeased(t *testing.T) {
	src := t.TempDir()
	dst := filepath.Join(t.TempDir(), "copy")
	leased := filepath.Join(src, "leased")
	if err := os.WriteFile(leased, []byte("data"), 0o644); err != nil {
		t.Fatal(err)
	}
	f, err := os.OpenFile(leased, os.O_RDWR, 0)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	if _, err := unix.FcntlInt(f.Fd(), unix.F_SETLEASE, unix.F_WRLCK); err != nil {
		t.Skipf("cannot take a write lease on %s: %v", leased, err)
	}
	defer unix.FcntlInt(f.Fd(), unix.F_SETLEASE, unix.F_UNLCK)

	ctx, cancel := context.WithTimeout(context.Background(), time.Second)
	defer cancel()
	done := make(chan error, 1)
	start := time.Now()
	go func() {
		_, err := copyTree(ctx, src, dst)
		done <- err
	}()
	select {
	case err := <-done:
		if err == nil {
			// Copied within its second: the lease broke or was not waited for. Fine.
			return
		}
	case <-time.After(5 * time.Second):
		// Let it go, and say how long it would have waited.
		unix.FcntlInt(f.Fd(), unix.F_SETLEASE, unix.F_UNLCK)
		err := <-done
		t.Errorf("copyTree under a context of 1s was still running %v later, blocked opening %s (held by a lease until its break time, %s s); "+
			"it returned %v once the lease was let go", time.Since(start).Round(time.Second), leased, leaseBreakTime(), err)
	}
}

func leaseBreakTime() string {
	b, err := os.ReadFile("/proc/sys/fs/lease-break-time")
	if err != nil {
		return "?"
	}
	return strings.TrimSpace(string(b))
}

// Two processes serve one root (volctl's plugin and Nomad's). A snapshot's copy is made and
// renamed into snapshots/ID, and waits for the records' lock, which the other process holds a
// moment (its own RPC). Meanwhile a third plugin process starts on the root (Nomad's restarted):
// its sweep finds snapshots/ID unrecorded and unlocked, takes it for an interrupted create's,
// and removes it. The docs promise "a create locks its new directory until its record is saved
// (holdNew), and the sweep removes only a directory it can lock" and that the sweep does not
// take the other's create in progress for an interrupted one; here the whole copy is thrown
// away and the snapshot fails.
// Found by helper review66.
func TestStartDoesNotSweepASnapshotWaitingToBeRecorded(t *testing.T) {
	p, root, volID, dir := pluginWithOneVolume(t)
	if err := os.WriteFile(filepath.Join(dir, "data"), []byte("the volume's data"), 0o644); err != nil {
		t.Fatal(err)
	}
	// The other process's RPC takes the records' lock while the copy runs (under no lock).
	meta, err := os.Open(filepath.Join(root, metaDir))
	if err != nil {
		t.Fatal(err)
	}
	defer meta.Close()
	AfterEachCopiedFile(t, func(rel string) {
		if rel == "data" {
			if err := unix.Flock(int(meta.Fd()), unix.LOCK_EX); err != nil {
				t.Error(err)
			}
		}
	})
	type result struct {
		resp *csi.CreateSnapshotResponse
		err  error
	}
	done := make(chan result, 1)
	go func() {
		resp, err := p.CreateSnapshot(context.Background(), &csi.CreateSnapshotRequest{Name: "s", SourceVolumeId: volID})
		done <- result{resp, err}
	}()
	// Wait for the copy to be renamed into snapshots/.
	deadline := time.Now().Add(10 * time.Second)
	var placed []os.DirEntry
	for len(placed) == 0 {
		placed, _ = os.ReadDir(filepath.Join(root, "snapshots"))
		if time.Now().After(deadline) {
			unix.Flock(int(meta.Fd()), unix.LOCK_UN)
			t.Fatalf("no snapshot directory was put in place in 10s: %v", <-done)
		}
		time.Sleep(5 * time.Millisecond)
	}
	// Another plugin process starts on the root meanwhile.
	if _, err := New(Config{Root: root, NodeID: "n1"}); err != nil {
		t.Fatal(err)
	}
	_, gone := os.Stat(filepath.Join(root, "snapshots", placed[0].Name()))
	if err := unix.Flock(int(meta.Fd()), unix.LOCK_UN); err != nil {
		t.Fatal(err)
	}
	r := <-done
	if r.err != nil {
		t.Fatalf("CreateSnapshot failed once another plugin process started on the root while it waited to record its copy "+
			"(the start's sweep removed %s: %v): %v", placed[0].Name(), gone, r.err)
	}
	snapDir := p.snapshotPath(r.resp.GetSnapshot().GetSnapshotId())
	if b, err := os.ReadFile(filepath.Join(snapDir, "data")); err != nil || string(b) != "the volume's data" {
		t.Errorf("the recorded snapshot's copy of data: %q, %v", b, err)
	}
}
