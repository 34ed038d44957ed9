package hostpath_test

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/volctl/volctl/internal/hostpath"
	"github.com/volctl/volctl/internal/hostpath/hostpathtest"
)

// A --root another user owns or may write, or reached through a directory they may write, is
// refused before the plugin uses it: whoever controls it could put a symlink where a volume's
// directory is (volumes/<id> -> /etc), and the plugin, as root, would bind-mount what it points
// to on the staging path and hand it to the volume's consumer; or read and change the records
// (meta/) that say where the plugin mounts and unmounts.
func TestRootAnotherUserControlsIsRefused(t *testing.T) {
	if os.Geteuid() != 0 {
		t.Skip("needs root: the test gives directories to another user (chown)")
	}
	const other = 4242
	// dir is a directory (or, with link set, a symlink to link) the case makes below the test's
	// private directory, with mode, and given to uid other when theirs is set.
	type dir struct {
		path, link string
		mode       os.FileMode
		theirs     bool
		acl        bool // uid other may write it through an ACL (setfacl -m u:4242:rwx)
		masked     bool // then the ACL's mask made r-x, its group bits (chmod g-w): other may not
	}
	for _, tt := range []struct {
		name    string
		made    []dir
		root    string   // the root to serve, below the test's directory
		refused []string // fragments of the error (ROOT: the root); none: served
	}{
		{"a new root in a private directory", nil, "root", nil},
		{"an existing root of this user's that others may read", []dir{{path: "root", mode: 0o755}}, "root", nil},
		{"a root another user owns", []dir{{path: "root", mode: 0o700, theirs: true}}, "root", []string{"owned by uid 4242"}},
		{"a root others may write", []dir{{path: "root", mode: 0o777}}, "root", []string{"writable by other users (mode 0777)", "chmod 700"}},
		{"a sticky root others may write", []dir{{path: "root", mode: 0o777 | os.ModeSticky}}, "root", []string{"writable by other users"}},
		{"a root in a directory others may write", []dir{{path: "shared", mode: 0o777}}, "shared/root",
			[]string{"is reached through", "shared", "writable by other users"}},
		{"a root reached through another user's symlink", []dir{{path: "real", mode: 0o700}, {path: "link", link: "real", theirs: true}}, "link",
			[]string{"symlink", "owned by uid 4242"}},
		{"a volumes directory another user owns", []dir{{path: "root", mode: 0o700}, {path: "root/volumes", mode: 0o700, theirs: true}}, "root",
			[]string{"volumes", "owned by uid 4242"}},
		{"a meta directory that is this user's symlink to a private directory",
			[]dir{{path: "root", mode: 0o700}, {path: "elsewhere", mode: 0o700}, {path: "root/meta", link: "../elsewhere"}}, "root", nil},
		{"a meta directory that is another user's symlink",
			[]dir{{path: "root", mode: 0o700}, {path: "elsewhere", mode: 0o700}, {path: "root/meta", link: "../elsewhere", theirs: true}}, "root",
			[]string{"symlink ROOT/meta", "owned by uid 4242"}},
		{"a snapshots directory others may write", []dir{{path: "root", mode: 0o700}, {path: "root/snapshots", mode: 0o777}}, "root",
			[]string{"snapshots", "writable by other users"}},
		{"a root another user may write through an ACL", []dir{{path: "root", mode: 0o755, acl: true}}, "root",
			[]string{"writable by uid 4242 through its ACL", "chmod 700"}},
		{"a root in a directory another user may write through an ACL", []dir{{path: "shared", mode: 0o755, acl: true}}, "shared/root",
			[]string{"is reached through", "shared", "writable by uid 4242 through its ACL"}},
		// The root a symlink of this user's to such a directory: the root's own ACL read is of
		// the link (a symlink has none), but its directories' ways go through what the link
		// names (pathtrust.Ancestors follows it), which is refused there.
		{"a root that is a symlink to a directory another user may write through an ACL",
			[]dir{{path: "real", mode: 0o755, acl: true}, {path: "root", link: "real"}}, "root",
			[]string{"writable by uid 4242 through its ACL"}},
		{"a root in a directory whose ACL's write for another user its mask takes away", []dir{{path: "shared", mode: 0o755, acl: true, masked: true}}, "shared/root", nil},
	} {
		t.Run(tt.name, func(t *testing.T) {
			base := t.TempDir()
			for _, d := range tt.made {
				path := filepath.Join(base, d.path)
				if d.link != "" {
					mustOK(t, os.Symlink(d.link, path))
				} else {
					mustOK(t, os.Mkdir(path, 0o700))
					mustOK(t, os.Chmod(path, d.mode))
				}
				if d.theirs {
					mustOK(t, os.Lchown(path, other, other))
				}
				if d.acl {
					hostpathtest.GrantWrite(t, path, other)
				}
				if d.masked {
					mustOK(t, os.Chmod(path, d.mode))
				}
			}
			root := filepath.Join(base, tt.root)
			_, err := hostpath.New(hostpath.Config{Root: root, NodeID: "n1"})
			if tt.refused == nil {
				if err != nil {
					t.Fatalf("New with root %s: %v", root, err)
				}
				return
			}
			if err == nil {
				t.Fatalf("New served root %s, which another user controls (%s)", root, tt.name)
			}
			for _, want := range append([]string{"root " + root}, tt.refused...) {
				if want = strings.ReplaceAll(want, "ROOT", root); !strings.Contains(err.Error(), want) {
					t.Errorf("error %q does not say %q", err, want)
				}
			}
		})
	}
}
