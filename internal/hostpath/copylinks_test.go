package hostpath

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"syscall"
	"testing"
)

// A consumer rotates its files while a snapshot copies the volume (rsnapshot does): it removes
// both names of a linked file the copy has copied, a/x1 and a/x2, and makes a new file with two
// names, z/y and z/y-link. The file system gives the new file the number of the inode just
// freed (ext4 does), and the copy, which knew a/x1's copy by that number, made the new names
// links to it: the snapshot held the deleted file's content for z/y. The copy tells them apart
// by the file's birth time and generation, as the kernel reports them: z/y is copied as itself,
// its two names one copy still.
func TestHardLinkToAFileDeletedDuringTheCopyIsNotMade(t *testing.T) {
	const old, fresh = "OLD deleted file", "NEW file, its inode number reused"
	var src, dst, reused string
	// Another process on the file system (other tests) may take the number freed first: the
	// scenario is tried again, in new directories, a few times.
	for attempt := 0; attempt < 5 && reused == ""; attempt++ {
		src, dst, reused = rotateWhileCopying(t, old, fresh)
	}
	if reused == "" {
		t.Skipf("in 5 tries, no file made in %s got the inode number of the one removed a moment before: this file system does not reuse inode numbers at once (ext4 does)", src)
	}
	rel, _ := filepath.Rel(src, reused)
	for _, name := range []string{rel, rel + "-link"} {
		got, err := os.ReadFile(filepath.Join(dst, name))
		if err != nil {
			t.Fatal(err)
		}
		if string(got) != fresh {
			t.Errorf("the copy of %s holds %q, the content of a/x1, removed during the copy, whose inode number %s got; want %q", name, got, rel, fresh)
		}
	}
	if inodeOf(t, filepath.Join(dst, rel)) != inodeOf(t, filepath.Join(dst, rel+"-link")) {
		t.Errorf("the copies of %s and %s, two names of one file, are two files", rel, rel+"-link")
	}
	for _, n := range []string{"x1", "x2"} {
		if got, err := os.ReadFile(filepath.Join(dst, "a", n)); err != nil || string(got) != old {
			t.Errorf("the copy of a/%s: %q, %v; want %q, copied before it was removed", n, got, err, old)
		}
	}
	if inodeOf(t, filepath.Join(dst, "a", "x1")) != inodeOf(t, filepath.Join(dst, "a", "x2")) {
		t.Error("the copies of a/x1 and a/x2, two names of one file, are two files")
	}
}

// rotateWhileCopying copies a tree with a/x1 and a/x2, two names of a file holding old, and
// once the copy is past a/ (at m/f), removes them and makes files holding fresh in z/ until one
// gets the inode number freed: reused names it, given a second name (reused+"-link"), or is ""
// where none did.
func rotateWhileCopying(t *testing.T, old, fresh string) (src, dst, reused string) {
	t.Helper()
	src = t.TempDir()
	dst = filepath.Join(t.TempDir(), "copy")
	for _, d := range []string{"a", "m", "z"} {
		mustMkdir(t, filepath.Join(src, d))
	}
	mustWrite(t, filepath.Join(src, "a", "x1"), old)
	if err := os.Link(filepath.Join(src, "a", "x1"), filepath.Join(src, "a", "x2")); err != nil {
		t.Fatal(err)
	}
	mustWrite(t, filepath.Join(src, "m", "f"), "between")
	oldIno := inodeOf(t, filepath.Join(src, "a", "x1"))

	hook := afterCopy
	defer func() { afterCopy = hook }()
	afterCopy = func(rel string) {
		if rel != filepath.Join("m", "f") {
			return
		}
		// a/ is copied, z/ not listed yet: rotate.
		for _, n := range []string{"x1", "x2"} {
			if err := os.Remove(filepath.Join(src, "a", n)); err != nil {
				t.Fatal(err)
			}
		}
		for i := range 1000 { // until the file system hands out the freed number
			name := filepath.Join(src, "z", fmt.Sprintf("y%04d", i))
			mustWrite(t, name, fresh)
			if inodeOf(t, name) == oldIno {
				reused = name
				if err := os.Link(name, name+"-link"); err != nil {
					t.Fatal(err)
				}
				return
			}
		}
	}
	if _, err := copyTree(context.Background(), src, dst); err != nil {
		t.Fatal(err)
	}
	return src, dst, reused
}

func inodeOf(t *testing.T, path string) uint64 {
	t.Helper()
	var st syscall.Stat_t
	if err := syscall.Stat(path, &st); err != nil {
		t.Fatal(err)
	}
	return st.Ino
}

func mustMkdir(t *testing.T, path string) {
	t.Helper()
	if err := os.Mkdir(path, 0o755); err != nil {
		t.Fatal(err)
	}
}

func mustWrite(t *testing.T, path, content string) {
	t.Helper()
	if err := os.WriteFile(path, []byte(content), 0o644); err != nil {
		t.Fatal(err)
	}
}

// withoutFileIdentity makes the kernel tell nothing of a file's identity for the test, as on
// NFS: no birth time, no generation.
func withoutFileIdentity(t *testing.T) {
	was := identifyFile
	identifyFile = func(*treeEntry, string) fileID { return fileID{} }
	t.Cleanup(func() { identifyFile = was })
}

// On a root whose file system reports neither birth time nor generation (NFS), the copy had no
// way to tell a file from a new one given its number, and copied each name of a linked file: a
// consumer's file linked a thousand times in a volume of a megabyte was a thousand copies in
// each snapshot and clone, on the root every volume shares. The copy holds each linked file it
// copied open until it is done, so its number names no other file meanwhile, and links its
// other names to its one copy.
func TestCopyLinksNamesOfOneFileWhereTheKernelCannotTellFilesApart(t *testing.T) {
	withoutFileIdentity(t)
	src := t.TempDir()
	dst := filepath.Join(t.TempDir(), "copy")
	mustMkdir(t, filepath.Join(src, "sub"))
	mustWrite(t, filepath.Join(src, "data"), "one file")
	names := []string{"data"}
	for _, n := range []string{"sub/data", "data.a", "data.b", "data.c", "data.d", "data.e"} {
		if err := os.Link(filepath.Join(src, "data"), filepath.Join(src, n)); err != nil {
			t.Fatal(err)
		}
		names = append(names, n)
	}
	if _, err := copyTree(context.Background(), src, dst); err != nil {
		t.Fatal(err)
	}
	first := inodeOf(t, filepath.Join(dst, "data"))
	for _, n := range names {
		if got, err := os.ReadFile(filepath.Join(dst, n)); err != nil || string(got) != "one file" {
			t.Errorf("the copy of %s: %q, %v", n, got, err)
		}
		if ino := inodeOf(t, filepath.Join(dst, n)); ino != first {
			t.Errorf("the copy of %s is inode %d, data's %d: one file's %d names copied as %d files", n, ino, first, len(names), len(names))
		}
	}
}

// Linking by the number alone is sound only while the number names one file: a file the copy
// linked names to is held open, so the rotation of TestHardLinkToAFileDeletedDuringTheCopyIsNotMade
// cannot give its number to a new file during the copy, and the new file is copied as itself.
func TestCopyWithoutFileIdentityHoldsTheNumberOfWhatItLinks(t *testing.T) {
	withoutFileIdentity(t)
	const old, fresh = "OLD deleted file", "NEW file"
	src, dst, reused := rotateWhileCopying(t, old, fresh)
	if reused != "" {
		rel, _ := filepath.Rel(src, reused)
		for _, name := range []string{rel, rel + "-link"} {
			if got, err := os.ReadFile(filepath.Join(dst, name)); err != nil || string(got) != fresh {
				t.Errorf("%s got the inode number of a/x1, removed during the copy, and its copy %s holds %q, %v; want %q", rel, name, got, err, fresh)
			}
		}
	}
	for _, n := range []string{"x1", "x2"} {
		if got, err := os.ReadFile(filepath.Join(dst, "a", n)); err != nil || string(got) != old {
			t.Errorf("the copy of a/%s: %q, %v; want %q, copied before it was removed", n, got, err, old)
		}
	}
	if inodeOf(t, filepath.Join(dst, "a", "x1")) != inodeOf(t, filepath.Join(dst, "a", "x2")) {
		t.Error("the copies of a/x1 and a/x2, two names of one file, are two files")
	}
}

// A plugin whose descriptors are few (a container's `--ulimit nofile=1024:1024`) copying a
// volume of more linked files than that on a root without file identity: the copy held one
// descriptor for each, past the process's limit, and failed halfway, "too many open files" (a
// snapshot or clone that copied before the copy held files open). It holds at most a quarter
// of what the process may open, and no more once a hold fails; the files past that have each
// name copied, as before.
func TestCopyHoldsNoMoreFilesOpenThanTheProcessMaySpare(t *testing.T) {
	withoutFileIdentity(t)
	var was syscall.Rlimit
	if err := syscall.Getrlimit(syscall.RLIMIT_NOFILE, &was); err != nil {
		t.Fatal(err)
	}
	const limit, files = 1024, 1100
	if was.Cur < limit {
		t.Skipf("RLIMIT_NOFILE is %d here, below the %d this test lowers it to", was.Cur, limit)
	}
	src := t.TempDir()
	dst := filepath.Join(t.TempDir(), "copy")
	for i := range files {
		name := filepath.Join(src, fmt.Sprintf("f%04d", i))
		mustWrite(t, name, name)
		if err := os.Link(name, name+"-link"); err != nil {
			t.Fatal(err)
		}
	}
	low := was
	low.Cur = limit
	if err := syscall.Setrlimit(syscall.RLIMIT_NOFILE, &low); err != nil {
		t.Fatal(err)
	}
	defer func() {
		if err := syscall.Setrlimit(syscall.RLIMIT_NOFILE, &was); err != nil {
			t.Fatal(err)
		}
	}()
	if _, err := copyTree(context.Background(), src, dst); err != nil {
		t.Fatalf("copy of %d linked files under RLIMIT_NOFILE %d: %v", files, limit, err)
	}
	linked := 0
	for i := range files {
		name := fmt.Sprintf("f%04d", i)
		for _, n := range []string{name, name + "-link"} {
			if got, err := os.ReadFile(filepath.Join(dst, n)); err != nil || string(got) != filepath.Join(src, name) {
				t.Fatalf("the copy of %s: %q, %v", n, got, err)
			}
		}
		if inodeOf(t, filepath.Join(dst, name)) == inodeOf(t, filepath.Join(dst, name+"-link")) {
			linked++
		}
	}
	if linked == 0 || linked > limit/4 {
		t.Errorf("%d of %d files had their two names linked, want some, and no more than the %d the copy may hold open", linked, files, limit/4)
	}
}
