package store

import (
	"errors"
	"fmt"
	"io/fs"
	"log/slog"
	"path/filepath"

	"golang.org/x/sys/unix"
)

// A state dir on a network file system is refused. SQLite's WAL, which volctl's database uses,
// keeps its index in shared memory mapped from volctl.db-shm, which works between processes of
// one host only: SQLite's documentation says plainly that WAL does not work over a network
// file system (https://www.sqlite.org/wal.html, "Overview"), and that its locks there are only
// as good as the file system's, which for NFS and SMB they are not always
// (https://www.sqlite.org/useovernet.html). volctl's own locks are flocks, which NFS turns into
// byte-range locks held at the server, seen by every host mounting it, and /proc/locks (which
// names the processes holding them) lists only this host's. A state dir another host can also
// use would lose claims, and volctl's promises with them, without a word; refusing says where
// and why once, before anything is made there.
//
// A FUSE file system may be local (an overlay, a mergerfs) or remote (sshfs, s3fs): volctl
// cannot tell which, so it warns and goes on.

// networkFS names the file systems, by statfs f_type, that reach another host's storage.
var networkFS = map[int64]string{
	unix.NFS_SUPER_MAGIC:   "NFS",
	unix.SMB_SUPER_MAGIC:   "SMB",
	unix.SMB2_SUPER_MAGIC:  "SMB2",
	unix.CIFS_SUPER_MAGIC:  "CIFS",
	unix.V9FS_MAGIC:        "9p",
	unix.AFS_SUPER_MAGIC:   "AFS",
	unix.AFS_FS_MAGIC:      "AFS",
	unix.CEPH_SUPER_MAGIC:  "CephFS",
	unix.CODA_SUPER_MAGIC:  "Coda",
	unix.NCP_SUPER_MAGIC:   "NCP",
	unix.OCFS2_SUPER_MAGIC: "OCFS2",
	0x01161970:             "GFS2",
	0x0bd00bd0:             "Lustre",
	0x20030528:             "OrangeFS",
	0x786f4256:             "vboxsf",
}

// fsInfo is what Open reads of the file system holding the state dir, from one statfs: its
// f_type and whether it is mounted read-only.
type fsInfo struct {
	typ      int64
	readOnly bool
}

// statFS is statfs of the file system holding path; a variable so tests can stand in a network
// file system.
var statFS = func(path string) (fsInfo, error) {
	var st unix.Statfs_t
	if err := unix.Statfs(path, &st); err != nil {
		return fsInfo{}, err
	}
	return fsInfo{typ: int64(st.Type), readOnly: st.Flags&unix.ST_RDONLY != 0}, nil
}

// checkFS judges the file system of the state dir dir with one statfs: it refuses a network
// file system and warns of FUSE, and says whether dir is on one mounted read-only (openReadOnly).
// A dir not made yet is judged by the nearest of its parents that exists, where it would be
// made, and is not read-only: making it fails, and says so.
func checkFS(dir string, log *slog.Logger) (readOnly bool, err error) {
	at := dir
	fi, err := statFS(at)
	for errors.Is(err, fs.ErrNotExist) && filepath.Dir(at) != at {
		at = filepath.Dir(at)
		fi, err = statFS(at)
	}
	if err != nil {
		return false, nil // nothing to judge by: the open says what is wrong with the path
	}
	if name, ok := networkFS[fi.typ]; ok {
		return false, &DirError{Dir: dir, Err: fmt.Errorf("open state: %s is on a network file system (%s): "+
			"SQLite's write-ahead log, which volctl's state database uses, and volctl's locks work between the processes of one host only, "+
			"and the state would be lost or damaged without a word; use a state dir on a local disk (--state-dir or VOLCTL_STATE_DIR)", at, name), Named: true}
	}
	if fi.typ == unix.FUSE_SUPER_MAGIC {
		log.Warn("the state dir is on a FUSE file system: if it reaches another host's storage (sshfs, s3fs, a network share), "+
			"SQLite's write-ahead log and volctl's locks do not work there; use a state dir on a local disk", "path", at)
	}
	return at == dir && fi.readOnly, nil
}
