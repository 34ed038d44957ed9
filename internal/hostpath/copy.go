package hostpath

import (
	"context"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"syscall"
)

// copyTree copies the directory src to dst, which must not exist: directories, regular files
// and symlinks, with their modes and, when the plugin runs as root, their owners. Sockets,
// FIFOs and devices are skipped: they are endpoints, not data, and a snapshot of one means
// nothing. It stops early when ctx is done.
func copyTree(ctx context.Context, src, dst string) error {
	return filepath.WalkDir(src, func(path string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if err := ctx.Err(); err != nil {
			return err
		}
		rel, err := filepath.Rel(src, path)
		if err != nil {
			return err
		}
		target := filepath.Join(dst, rel)
		info, err := d.Info()
		if err != nil {
			return err
		}
		switch {
		case d.IsDir():
			if err := os.Mkdir(target, info.Mode().Perm()); err != nil {
				return err
			}
		case d.Type()&fs.ModeSymlink != 0:
			link, err := os.Readlink(path)
			if err != nil {
				return err
			}
			if err := os.Symlink(link, target); err != nil {
				return err
			}
		case d.Type().IsRegular():
			if err := copyFile(path, target, info.Mode().Perm()); err != nil {
				return err
			}
		default:
			return nil
		}
		return copyOwnerAndMode(target, info)
	})
}

func copyFile(src, dst string, perm fs.FileMode) error {
	in, err := os.Open(src)
	if err != nil {
		return err
	}
	defer in.Close()
	out, err := os.OpenFile(dst, os.O_WRONLY|os.O_CREATE|os.O_EXCL, perm)
	if err != nil {
		return err
	}
	if _, err := io.Copy(out, in); err != nil {
		out.Close()
		return fmt.Errorf("copying %q: %w", src, err)
	}
	return out.Close()
}

// copyOwnerAndMode repeats the source's owner (best effort: only root may give files away) and
// its exact permission bits, which Mkdir and OpenFile filtered through the umask.
func copyOwnerAndMode(target string, info fs.FileInfo) error {
	if st, ok := info.Sys().(*syscall.Stat_t); ok && os.Geteuid() == 0 {
		if err := os.Lchown(target, int(st.Uid), int(st.Gid)); err != nil {
			return err
		}
	}
	if info.Mode()&fs.ModeSymlink != 0 {
		return nil // a symlink's own mode means nothing on Linux
	}
	return os.Chmod(target, info.Mode()&(fs.ModePerm|fs.ModeSetuid|fs.ModeSetgid|fs.ModeSticky))
}

// usage is what a directory tree occupies: bytes of allocated blocks and the number of inodes.
type usage struct {
	bytes  int64
	inodes int64
}

// diskUsage walks dir like du: it counts allocated blocks, not apparent sizes, and every entry
// as one inode (hard links counted once per link; good enough for a stats RPC).
func diskUsage(ctx context.Context, dir string) (usage, error) {
	var u usage
	err := filepath.WalkDir(dir, func(path string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if err := ctx.Err(); err != nil {
			return err
		}
		info, err := d.Info()
		if err != nil {
			return err
		}
		u.inodes++
		if st, ok := info.Sys().(*syscall.Stat_t); ok {
			u.bytes += st.Blocks * 512
		} else {
			u.bytes += info.Size()
		}
		return nil
	})
	return u, err
}
