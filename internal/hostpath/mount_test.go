package hostpath_test

import (
	"errors"
	"fmt"
	"os"
	"testing"

	"golang.org/x/sys/unix"

	"github.com/volctl/volctl/internal/hostpath"
)

// TestIsNoMountPrivilege: a mount refused for want of privileges is told by its errno, however
// wrapped, not by any message; quickstart relies on it to say "run it as root".
func TestIsNoMountPrivilege(t *testing.T) {
	for _, tt := range []struct {
		err  error
		want bool
	}{
		{&os.PathError{Op: "bind-mount /a on", Path: "/b", Err: unix.EPERM}, true},
		{fmt.Errorf("mounting: %w", unix.EACCES), true},
		{&os.PathError{Op: "bind-mount /a on", Path: "/b", Err: unix.EINVAL}, false},
		{errors.New("operation not permitted"), false}, // the words alone are not the errno
		{nil, false},
	} {
		if got := hostpath.IsNoMountPrivilege(tt.err); got != tt.want {
			t.Errorf("IsNoMountPrivilege(%v) = %v, want %v", tt.err, got, tt.want)
		}
	}
}
