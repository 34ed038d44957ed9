package csitest

import (
	"errors"
	"fmt"
	"maps"
	"net/url"
	"os"
	"path/filepath"
	"slices"
	"testing"
	"time"

	"golang.org/x/sys/unix"
	"google.golang.org/grpc/codes"

	"github.com/volctl/volctl/internal/hostpath/hostpathtest"
)

// NewMountingMemPlugin returns a MemPlugin configured as cfg says that mounts for real
// (MemConfig.MountRoot, a fresh directory), for a test whose engine reads the kernel's mount
// table and so insists that a published target is a mount point. Whatever the plugin still
// has mounted when the test ends is unmounted then, even when the test failed. Where bind
// mounts are not allowed (not root, no CAP_SYS_ADMIN), the test is skipped, saying why.
func NewMountingMemPlugin(t testing.TB, cfg MemConfig) *MemPlugin {
	t.Helper()
	hostpathtest.RequireMount(t)
	// t.TempDir registers the removal of the test's temp dirs at its first call, so the
	// cleanup registered below runs before it: no temp dir is removed through a mount.
	cfg.MountRoot = t.TempDir()
	m := NewMemPlugin(cfg)
	t.Cleanup(func() {
		if err := m.UnmountAll(); err != nil {
			t.Errorf("memplugin: %v", err)
		}
	})
	return m
}

// UnmountAll unmounts every path the plugin mounted and has not unmounted yet.
func (m *MemPlugin) UnmountAll() error {
	m.mu.Lock()
	defer m.mu.Unlock()
	var errs []error
	for _, p := range slices.Sorted(maps.Keys(m.mounted)) {
		if err := m.unmount(p); err != nil {
			errs = append(errs, err)
		}
	}
	return errors.Join(errs...)
}

// stagingMount is the staging path as the plugin mounts it, and a target from: none with
// MountTargetsOnly (unless StageNothing, which publishes from the staging path, mounted or not).
func (m *MemPlugin) stagingMount(path string) string {
	if m.cfg.MountTargetsOnly && !m.cfg.StageNothing {
		return ""
	}
	return path
}

// publishFrom is what NodePublishVolume mounts at a file-system target: PublishFrom's path when
// it names one, else the staging path as the plugin mounts it (stagingMount).
func (m *MemPlugin) publishFrom(staging, target string) string {
	if m.cfg.PublishFrom != nil {
		if src := m.cfg.PublishFrom(staging, target); src != "" {
			return src
		}
	}
	return m.stagingMount(staging)
}

// stageFrom is what NodeStageVolume mounts at the staging path: StageFrom's path when it names
// one, else "" (the volume's backing directory).
func (m *MemPlugin) stageFrom(staging string) string {
	if m.cfg.StageFrom != nil {
		return m.cfg.StageFrom(staging)
	}
	return ""
}

// mountVolume bind-mounts the volume at dst when the plugin mounts (MountRoot): from src (its
// staging path) when set, else from the volume's backing directory, read-only when asked. The
// caller holds m.mu.
func (m *MemPlugin) mountVolume(v *memVolume, src, dst string, readOnly bool) error {
	if m.cfg.MountRoot == "" || dst == "" {
		return nil
	}
	if src == "" {
		src = filepath.Join(m.cfg.MountRoot, url.PathEscape(v.vol.ID))
		if err := os.MkdirAll(src, 0o750); err != nil {
			return errorf(codes.Internal, "backing directory: %v", err)
		}
	}
	if err := unix.Mount(src, dst, "", unix.MS_BIND, ""); err != nil {
		return errorf(codes.Internal, "bind-mount %s at %s: %v", src, dst, err)
	}
	if m.mounted == nil {
		m.mounted = map[string]bool{}
	}
	m.mounted[dst] = true
	if readOnly {
		if err := unix.Mount("", dst, "", unix.MS_BIND|unix.MS_REMOUNT|unix.MS_RDONLY, ""); err != nil {
			_ = m.unmount(dst)
			return errorf(codes.Internal, "remount %s read-only: %v", dst, err)
		}
	}
	return nil
}

// mountBlock bind-mounts the volume's backing file (a block volume's device, as far as a test
// can tell) at dst when the plugin mounts (MountRoot), read-only when asked; or PublishFrom's
// path, given the request's staging path, when it names one. The caller holds m.mu.
func (m *MemPlugin) mountBlock(v *memVolume, staging, dst string, readOnly bool) error {
	if m.cfg.MountRoot == "" {
		return nil
	}
	if m.cfg.PublishFrom != nil {
		if src := m.cfg.PublishFrom(staging, dst); src != "" {
			return m.mountVolume(v, src, dst, readOnly)
		}
	}
	src := filepath.Join(m.cfg.MountRoot, url.PathEscape(v.vol.ID)+".block")
	if err := makeFile(src); err != nil {
		return errorf(codes.Internal, "backing file: %v", err)
	}
	return m.mountVolume(v, src, dst, readOnly)
}

// makeFile makes an empty file at path, unless there is one.
func makeFile(path string) error {
	f, err := os.OpenFile(path, os.O_CREATE|os.O_WRONLY, 0o600)
	if err != nil {
		return err
	}
	return f.Close()
}

// unmount takes away every mount the plugin stacked at path (none when it mounts nothing). The
// caller holds m.mu. A mount busy for a moment is tried again, up to half a second: a child
// that this process (the tests') forked while a descriptor on the mount was open holds a copy
// until its exec closes it. One still busy past that (a descriptor volctl holds across the
// RPC) is an error.
func (m *MemPlugin) unmount(path string) error {
	if !m.mounted[path] {
		return nil
	}
	for busy := time.Millisecond; ; {
		err := unix.Unmount(path, 0)
		if errors.Is(err, unix.EINVAL) || errors.Is(err, unix.ENOENT) {
			break // no longer a mount point
		}
		if errors.Is(err, unix.EBUSY) && busy < 512*time.Millisecond {
			time.Sleep(busy)
			busy *= 2
			continue
		}
		if err != nil {
			return errorf(codes.Internal, "%v", fmt.Errorf("unmount %s: %w", path, err))
		}
	}
	delete(m.mounted, path)
	return nil
}
