package pathtrust

import (
	"encoding/binary"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"golang.org/x/sys/unix"
)

// grantWrite gives uid rwx on path through a POSIX access ACL (setfacl -m u:UID:rwx), the mask
// rwx: the mode's group bits, the mask's, become rwx. It skips the test on a file system
// without ACLs.
func grantWrite(t *testing.T, path string, uid uint32) {
	t.Helper()
	entry := func(tag, perm uint16, id uint32) []byte {
		return binary.LittleEndian.AppendUint32(binary.LittleEndian.AppendUint16(binary.LittleEndian.AppendUint16(nil, tag), perm), id)
	}
	const noID = ^uint32(0)
	acl := binary.LittleEndian.AppendUint32(nil, aclVersion)
	for _, e := range [][]byte{entry(0x01, 7, noID), entry(aclUser, 7, uid), entry(0x04, 5, noID), entry(aclMask, 7, noID), entry(0x20, 5, noID)} {
		acl = append(acl, e...)
	}
	if err := unix.Setxattr(path, aclAttr, acl, 0); errors.Is(err, unix.EOPNOTSUPP) {
		t.Skipf("the file system of %s has no POSIX ACLs", path)
	} else if err != nil {
		t.Fatal(err)
	}
}

// A directory on the way to a state dir or a --root that root owns, mode 0755, group root, is
// given write to another user by an ACL: its mode reads 0775, group root's, and OthersMayWrite
// took it as no other user's to write. That user could rename the dir below it away and put
// theirs in its place. Ancestors names the directory, the user and the ACL; the mask without
// write (chmod g-w) makes the ACL's entry ineffective, and the directory is trusted again.
func TestAncestorsSeeWriteAnACLGrants(t *testing.T) {
	if os.Geteuid() != 0 {
		t.Skip("an ACL for another user on a directory root owns needs root")
	}
	base := t.TempDir()
	shared := filepath.Join(base, "shared")
	if err := os.Mkdir(shared, 0o755); err != nil {
		t.Fatal(err)
	}
	grantWrite(t, shared, 4242)
	dir := filepath.Join(shared, "state")
	p := Ancestors(dir)
	if p == nil {
		t.Fatalf("Ancestors(%s) = nil: %s lets uid 4242 write it through its ACL", dir, shared)
	}
	if p.Path != shared || !strings.Contains(p.Why, "uid 4242 through its ACL") {
		t.Errorf("Ancestors(%s) = %+v, want %s named, writable by uid 4242 through its ACL", dir, *p, shared)
	}
	if err := os.Chmod(shared, 0o755); err != nil { // the mask r-x
		t.Fatal(err)
	}
	if p := Ancestors(dir); p != nil {
		t.Errorf("Ancestors(%s) = %+v once the ACL's mask has no write", dir, *p)
	}
}
