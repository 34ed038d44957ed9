// Package mountflags maps what statfs reports of a mount to the flags mount(2) takes, for the
// bind remounts of volctl's engine and of its own plugin: a bind remount sets every per-mount
// flag it is given and clears the others, so it must repeat the mount's own.
package mountflags

import "golang.org/x/sys/unix"

// STNoSymFollow is statfs's ST_NOSYMFOLLOW (Linux 5.10), which x/sys does not define.
const STNoSymFollow = 0x2000

// Carried maps the statfs flags of an existing mount (its f_flags) to the mount(2) flags a bind
// remount must repeat: each per-mount flag statfs reports, read-only and nosymfollow too, and
// strictatime where it reports no atime flag (a remount given none keeps the atime flags the
// bind copied, not the mount's strictatime).
func Carried(st int64) uintptr {
	var out uintptr
	for _, m := range []struct {
		st int64
		ms uintptr
	}{
		{unix.ST_RDONLY, unix.MS_RDONLY},
		{unix.ST_NOSUID, unix.MS_NOSUID},
		{unix.ST_NODEV, unix.MS_NODEV},
		{unix.ST_NOEXEC, unix.MS_NOEXEC},
		{unix.ST_NOATIME, unix.MS_NOATIME},
		{unix.ST_NODIRATIME, unix.MS_NODIRATIME},
		{unix.ST_RELATIME, unix.MS_RELATIME},
		{STNoSymFollow, unix.MS_NOSYMFOLLOW},
	} {
		if st&m.st != 0 {
			out |= m.ms
		}
	}
	if st&(unix.ST_NOATIME|unix.ST_RELATIME) == 0 {
		out |= unix.MS_STRICTATIME
	}
	return out
}
