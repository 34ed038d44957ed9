package mountflags

import (
	"testing"

	"golang.org/x/sys/unix"
)

func TestCarried(t *testing.T) {
	for _, c := range []struct {
		name string
		st   int64
		want uintptr
	}{
		{"none: strictatime", 0, unix.MS_STRICTATIME},
		{"ro, nosuid, nodev, noexec", unix.ST_RDONLY | unix.ST_NOSUID | unix.ST_NODEV | unix.ST_NOEXEC,
			unix.MS_RDONLY | unix.MS_NOSUID | unix.MS_NODEV | unix.MS_NOEXEC | unix.MS_STRICTATIME},
		{"noatime", unix.ST_NOATIME, unix.MS_NOATIME},
		{"relatime, nodiratime", unix.ST_RELATIME | unix.ST_NODIRATIME, unix.MS_RELATIME | unix.MS_NODIRATIME},
		{"nosymfollow", STNoSymFollow | unix.ST_RELATIME, unix.MS_NOSYMFOLLOW | unix.MS_RELATIME},
		{"a flag no remount repeats (ST_MANDLOCK)", unix.ST_MANDLOCK | unix.ST_RELATIME, unix.MS_RELATIME},
	} {
		if got := Carried(c.st); got != c.want {
			t.Errorf("%s: Carried(%#x) = %#x, want %#x", c.name, c.st, got, c.want)
		}
	}
}
