package nomad

// recheck39b: what the Nomad client masks of a volume's mount flags in what Nomad said, read
// again beside secrets38's rule for mount(8)'s words.

import (
	"strings"
	"testing"

	"github.com/volctl/volctl/internal/spec"
)

// The honest case: mount(8)'s own words among a volume's mount flags ("noatime", "dev",
// "sync") are no secret (spec.ShownMountFlag, secrets38), and the scrubber of a plugin's
// messages leaves them; Nomad's error naming them, or a device path, was shown masked:
// "mount flag [REDACTED] ...", "/[REDACTED]/sdb1", "f[REDACTED]". A word shorter than
// spec.MinScrubLen ("rw") is still masked where it stands alone
// (TestNomadShortMountFlagIsMaskedAsAWordOnly).
// And the adversary: a password inside a flag ("username=bob,password=...") echoed alone, as
// a parser's error quotes the value it could not read, which the plugin path masks
// (spec.MountFlagSecrets) and this one showed.
func TestNomadScrubOfMountFlagsIsThePluginPathsRule(t *testing.T) {
	t.Parallel()
	const pass = "hunter2-Flag-77"
	v := spec.Volume{ID: "db", MountOptions: &spec.MountOptions{FSType: "ext4",
		MountFlags: spec.MountFlags{"noatime", "dev", "sync", "rw", "username=bob,password=" + pass}}}
	msg := "1 error occurred: mount flag noatime unsupported on /dev/sdb1 after fsync; bad value " + strings.ToUpper(pass) + " in username=bob,password=" + pass
	want := "1 error occurred: mount flag noatime unsupported on /dev/sdb1 after fsync; bad value [REDACTED] in [REDACTED]"
	if got := scrub(msg, v); got != want {
		t.Errorf("scrubbed %q\n to %q,\nwant %q", msg, got, want)
	}
}
