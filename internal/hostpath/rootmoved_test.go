package hostpath_test

import (
	"os"
	"testing"

	"google.golang.org/grpc/codes"

	"github.com/volctl/volctl/internal/hostpath"
)

// The plugin's root moved (or removed) while the plugin serves it, volumes staged: every
// request that changes a record failed INTERNAL, "open ROOT/meta: no such file or directory",
// which said neither what happened nor what to do. It says the root was moved or removed and
// the two ways out.
func TestRootMovedUnderThePluginSaysSo(t *testing.T) {
	root := t.TempDir() + "/root"
	c, _ := startFake(t, hostpath.Config{Root: root})
	v, p := c.staged(t, "moved")
	if err := os.Rename(root, root+"-moved"); err != nil {
		t.Fatal(err)
	}
	wantCode(t, c.unstage(v, p), codes.FailedPrecondition, "root "+root+" has no meta directory",
		"moved or removed", "restart the plugin with --root where it is now")
}
