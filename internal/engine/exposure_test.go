package engine

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/volctl/volctl/internal/pathtrust"
)

// TestSocketExposureGroupRuleIsPathtrusts: a socket's directory that its group may write is
// exposed exactly when pathtrust says others may write it (pathtrust.OthersMayWrite), so the
// warning and the agent's trust in a command never disagree. Before, SocketExposure had a rule
// of its own, which warned of a directory whose group has root alone in it (Debian's staff),
// which pathtrust takes for root's, and said nothing of who the group lets in. Not parallel: it
// points pathtrust's account files at its own.
func TestSocketExposureGroupRuleIsPathtrusts(t *testing.T) {
	t.Parallel()
	if os.Geteuid() != 0 {
		t.Skip("chgrp to a group this user is not in needs root")
	}
	accounts := t.TempDir()
	for v, content := range map[*string]string{
		&pathtrust.GroupFile:   "root:x:0:\nstaff:x:4243:root\nusers:x:4244:alice\n",
		&pathtrust.PasswdFile:  "root:x:0:0:root:/root:/bin/sh\nalice:x:4242:4242::/home/alice:/bin/sh\n",
		&pathtrust.GshadowFile: "staff:*::\nusers:*::alice\n",
	} {
		p := filepath.Join(accounts, filepath.Base(*v))
		if err := os.WriteFile(p, []byte(content), 0o644); err != nil {
			t.Fatal(err)
		}
		old := *v
		*v = p
		t.Cleanup(func() { *v = old })
	}
	base := t.TempDir()
	for _, c := range []struct {
		gid  int
		want string
	}{
		{4243, ""}, // staff: root alone
		{4244, "group users (gid 4244) may write it, and alice is in it"},
	} {
		dir := filepath.Join(base, strings.Repeat("d", c.gid-4242))
		if err := os.Mkdir(dir, 0o700); err != nil {
			t.Fatal(err)
		}
		if err := os.Chmod(dir, os.ModeSetgid|0o775); err != nil {
			t.Fatal(err)
		}
		if err := os.Chown(dir, 0, c.gid); err != nil {
			t.Fatal(err)
		}
		got := SocketExposure(filepath.Join(dir, "csi.sock"))
		if c.want == "" && got != "" || c.want != "" && (!strings.Contains(got, c.want) || !strings.Contains(got, "mode 02775")) {
			t.Errorf("SocketExposure in a directory of mode 02775, gid %d = %q; want %q", c.gid, got, c.want)
		}
	}
}
