package main

import (
	"encoding/json"
	"os"
	"os/exec"
	"strings"
	"testing"

	"github.com/volctl/volctl/internal/spec"
)

// A volctl started with its standard descriptors closed (`volctl ... >&- 2>&-`, a daemon's
// child, cron with them shut) opens its state database, its locks and a plugin's socket: had
// one of them taken descriptor 1 or 2, what volctl prints (the claim's target path, a
// warning) would have been written into it, the database corrupted by its own command's
// output. Go's runtime opens /dev/null at a closed descriptor 0, 1 or 2 before volctl runs, so
// nothing it opens takes their place, and what it prints is discarded as into /dev/null: the
// claim and release done, exit 0, the state whole (docs/json.md says so). This holds the
// toolchain to it.
func TestClosedStandardDescriptorsNeverReachTheState(t *testing.T) {
	t.Parallel()
	env := newHostEnv(t)
	env.createVolume("vol", spec.SingleNodeWriter)
	for _, step := range []struct {
		args      []string
		wantClaim bool
	}{
		{[]string{"volume", "claim", "vol", "--alloc", "a", "--verbose"}, true},
		{[]string{"volume", "ls", "--verbose"}, true},
		{[]string{"volume", "release", "vol", "--alloc", "a", "--verbose"}, false},
	} {
		cmd := exec.Command("/bin/sh", "-c", `exec volctl "$@" <&- >&- 2>&-`, "volctl")
		cmd.Args = append(cmd.Args, step.args...)
		cmd.Env = append(os.Environ(), "VOLCTL_STATE_DIR="+env.state, "NO_COLOR=1", "PATH="+shortPath(t))
		if err := cmd.Run(); err != nil {
			t.Errorf("volctl %s, its standard descriptors closed: %v; want exit 0, what it printed discarded", strings.Join(step.args, " "), err)
		}
		out := env.ok("volume", "status", "vol", "--json")
		var st struct {
			Claims []struct {
				State string `json:"state"`
			} `json:"claims"`
		}
		if err := json.Unmarshal([]byte(out), &st); err != nil {
			t.Fatalf("after volctl %s with its standard descriptors closed, volume status --json: %v\n%s", strings.Join(step.args, " "), err, out)
		}
		if got := len(st.Claims) == 1 && st.Claims[0].State == "published"; got != step.wantClaim {
			t.Fatalf("after volctl %s with its standard descriptors closed: claims %+v", strings.Join(step.args, " "), st.Claims)
		}
		env.checkInvariants()
	}
}
