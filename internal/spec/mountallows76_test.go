package spec

import (
	"slices"
	"testing"
)

// mount(8) applies the last of contradicting options: "suid,nosuid" mounts nosuid. Allows
// reported suid for it (any "suid" among the items was enough), and `volume status` warned of
// set-user-ID files allowed on a mount that forbade them; and user/users, which imply noexec,
// nosuid and nodev unless a later option says otherwise, were not read at all. The last word on
// each of suid, dev and exec decides.
func TestMountFlagsAllowsTakesTheLastWordOnEach(t *testing.T) {
	for _, c := range []struct {
		flags MountFlags
		want  []string
	}{
		{MountFlags{"suid,nosuid"}, nil},
		{MountFlags{"suid", "nosuid"}, nil},
		{MountFlags{"nosuid", "suid"}, []string{"suid"}},
		{MountFlags{"rw, suid ,dev", "nodev"}, []string{"suid"}},
		{MountFlags{"exec,suid,dev,user"}, nil},
		{MountFlags{"users", "exec"}, []string{"exec"}},
		{MountFlags{"suid,dev,exec,owner"}, []string{"exec"}},
		{MountFlags{"group,suid"}, []string{"suid"}},
		{MountFlags{"noexec,exec,suid"}, []string{"suid", "exec"}},
		{MountFlags{"password=suid"}, nil},
	} {
		if got := c.flags.Allows(); !slices.Equal(got, c.want) {
			t.Errorf("%q.Allows() = %q, want %q", c.flags.Plain(), got, c.want)
		}
	}
}
