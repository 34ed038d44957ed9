package cli

import (
	"path/filepath"
	"testing"

	"github.com/volctl/volctl/internal/iostreams"
)

// TestStateDirResolution follows the order of docs/architecture.md (Command line): --state-dir, $VOLCTL_STATE_DIR,
// /var/lib/volctl as root, else $XDG_STATE_HOME/volctl.
func TestStateDirResolution(t *testing.T) {
	tests := []struct {
		name string
		flag string
		env  map[string]string
		euid int
		want string
	}{
		{"flag wins", "/srv/flag", map[string]string{"VOLCTL_STATE_DIR": "/srv/env"}, 0, "/srv/flag"},
		{"env", "", map[string]string{"VOLCTL_STATE_DIR": "/srv/env"}, 0, "/srv/env"},
		{"root", "", nil, 0, "/var/lib/volctl"},
		{"user with XDG", "", map[string]string{"XDG_STATE_HOME": "/home/u/.state"}, 1000, "/home/u/.state/volctl"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			ios, _, _, _ := iostreams.Test()
			f := NewFactory(ios)
			f.stateDirFlag = tt.flag
			f.getenv = func(k string) string { return tt.env[k] }
			f.geteuid = func() int { return tt.euid }
			got, err := f.StateDir()
			if err != nil || got != tt.want {
				t.Fatalf("StateDir() = %q, %v; want %q", got, err, tt.want)
			}
		})
	}
	// A relative --state-dir is made absolute: it ends up in mount paths.
	ios, _, _, _ := iostreams.Test()
	f := NewFactory(ios)
	f.stateDirFlag = "rel/state"
	got, err := f.StateDir()
	if err != nil || !filepath.IsAbs(got) {
		t.Fatalf("relative state dir = %q, %v", got, err)
	}
}
