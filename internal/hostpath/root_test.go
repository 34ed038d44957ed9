package hostpath_test

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/volctl/volctl/internal/hostpath"
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
	for _, tt := range []struct {
		name    string
		setup   func(t *testing.T, base string) string // returns the root to serve
		refused []string                               // fragments of the error; none: served
	}{
		{"a new root in a private directory", func(t *testing.T, base string) string {
			return filepath.Join(base, "root")
		}, nil},
		{"an existing root of this user's that others may read", func(t *testing.T, base string) string {
			root := filepath.Join(base, "root")
			mustOK(t, os.Mkdir(root, 0o755))
			mustOK(t, os.Chmod(root, 0o755))
			return root
		}, nil},
		{"a root another user owns", func(t *testing.T, base string) string {
			root := filepath.Join(base, "root")
			mustOK(t, os.Mkdir(root, 0o700))
			mustOK(t, os.Chown(root, other, other))
			return root
		}, []string{"owned by uid 4242"}},
		{"a root others may write", func(t *testing.T, base string) string {
			root := filepath.Join(base, "root")
			mustOK(t, os.Mkdir(root, 0o700))
			mustOK(t, os.Chmod(root, 0o777))
			return root
		}, []string{"writable by other users (mode 0777)", "chmod 700"}},
		{"a sticky root others may write", func(t *testing.T, base string) string {
			root := filepath.Join(base, "root")
			mustOK(t, os.Mkdir(root, 0o700))
			mustOK(t, os.Chmod(root, 0o777|os.ModeSticky))
			return root
		}, []string{"writable by other users"}},
		{"a root in a directory others may write", func(t *testing.T, base string) string {
			shared := filepath.Join(base, "shared")
			mustOK(t, os.Mkdir(shared, 0o700))
			mustOK(t, os.Chmod(shared, 0o777))
			return filepath.Join(shared, "root")
		}, []string{"is reached through", "shared", "writable by other users"}},
		{"a root reached through another user's symlink", func(t *testing.T, base string) string {
			real := filepath.Join(base, "real")
			mustOK(t, os.Mkdir(real, 0o700))
			link := filepath.Join(base, "link")
			mustOK(t, os.Symlink(real, link))
			mustOK(t, os.Lchown(link, other, other))
			return link
		}, []string{"symlink", "owned by uid 4242"}},
		{"a volumes directory another user owns", func(t *testing.T, base string) string {
			root := filepath.Join(base, "root")
			mustOK(t, os.MkdirAll(filepath.Join(root, "volumes"), 0o700))
			mustOK(t, os.Chown(filepath.Join(root, "volumes"), other, other))
			return root
		}, []string{"volumes", "owned by uid 4242"}},
		{"a meta directory that is this user's symlink to a private directory", func(t *testing.T, base string) string {
			root := filepath.Join(base, "root")
			mustOK(t, os.Mkdir(root, 0o700))
			elsewhere := filepath.Join(base, "elsewhere")
			mustOK(t, os.Mkdir(elsewhere, 0o700))
			mustOK(t, os.Symlink(elsewhere, filepath.Join(root, "meta")))
			return root
		}, nil},
		{"a meta directory that is another user's symlink", func(t *testing.T, base string) string {
			root := filepath.Join(base, "root")
			mustOK(t, os.Mkdir(root, 0o700))
			elsewhere := filepath.Join(base, "elsewhere")
			mustOK(t, os.Mkdir(elsewhere, 0o700))
			mustOK(t, os.Symlink(elsewhere, filepath.Join(root, "meta")))
			mustOK(t, os.Lchown(filepath.Join(root, "meta"), other, other))
			return root
		}, []string{"symlink " + "ROOT/meta", "owned by uid 4242"}},
		{"a snapshots directory others may write", func(t *testing.T, base string) string {
			root := filepath.Join(base, "root")
			mustOK(t, os.MkdirAll(filepath.Join(root, "snapshots"), 0o700))
			mustOK(t, os.Chmod(filepath.Join(root, "snapshots"), 0o777))
			return root
		}, []string{"snapshots", "writable by other users"}},
	} {
		t.Run(tt.name, func(t *testing.T) {
			base := t.TempDir()
			root := tt.setup(t, base)
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
