package engine

import (
	"errors"
	"fmt"
	"os"

	"github.com/moby/sys/mountinfo"
	"golang.org/x/sys/unix"

	"github.com/volctl/volctl/internal/spec"
	"github.com/volctl/volctl/internal/store"
)

// bind makes a published claim's group volume_mounts: its target bind-mounted at each
// destination with the propagation asked for, read-only when asked. It is idempotent.
func (e *Engine) bind(cl *store.Claim) error {
	for _, b := range cl.Binds {
		mounted, err := mountinfo.Mounted(b.Destination)
		if err != nil && !errors.Is(err, os.ErrNotExist) {
			return fmt.Errorf("volume_mount %s: %w", b.Destination, err)
		}
		if mounted {
			continue
		}
		if err := bindMount(cl.TargetPath, b); err != nil {
			return err
		}
	}
	return nil
}

func bindMount(source string, b spec.VolumeMount) error {
	fail := func(step string, err error) error {
		_ = unix.Unmount(b.Destination, unix.MNT_DETACH)
		return fmt.Errorf("volume_mount %s: %s: %w", b.Destination, step, err)
	}
	fi, err := os.Stat(source)
	if err != nil {
		return fmt.Errorf("volume_mount %s: %w", b.Destination, err)
	}
	if fi.IsDir() {
		err = os.MkdirAll(b.Destination, 0o750)
	} else {
		err = touch(b.Destination)
	}
	if err != nil {
		return fmt.Errorf("volume_mount %s: %w", b.Destination, err)
	}
	if err := unix.Mount(source, b.Destination, "", unix.MS_BIND|unix.MS_REC, ""); err != nil {
		return fmt.Errorf("volume_mount %s: bind mount: %w", b.Destination, err)
	}
	if err := unix.Mount("", b.Destination, "", propagationFlag(b.PropagationMode)|unix.MS_REC, ""); err != nil {
		return fail("set propagation", err)
	}
	if b.ReadOnly {
		if err := unix.Mount("", b.Destination, "", unix.MS_BIND|unix.MS_REMOUNT|unix.MS_RDONLY, ""); err != nil {
			return fail("remount read-only", err)
		}
	}
	return nil
}

// propagationFlag maps Nomad's propagation modes to mount propagation: private sees nothing of
// later mounts, host-to-task receives the host's (slave), bidirectional shares both ways.
func propagationFlag(mode string) uintptr {
	switch mode {
	case spec.PropagationHostToTask:
		return unix.MS_SLAVE
	case spec.PropagationBidirectional:
		return unix.MS_SHARED
	}
	return unix.MS_PRIVATE
}

func touch(path string) error {
	f, err := os.OpenFile(path, os.O_CREATE|os.O_RDONLY, 0o640)
	if err != nil {
		return err
	}
	return f.Close()
}

// unbind removes a claim's volume_mounts; a destination that is not mounted is already done.
func (e *Engine) unbind(cl *store.Claim) error {
	for _, b := range cl.Binds {
		mounted, err := mountinfo.Mounted(b.Destination)
		if errors.Is(err, os.ErrNotExist) || (err == nil && !mounted) {
			continue
		}
		if err != nil {
			return fmt.Errorf("volume_mount %s: %w", b.Destination, err)
		}
		if err := unix.Unmount(b.Destination, 0); err != nil {
			return fmt.Errorf("volume_mount %s: unmount: %w (is something still using it?)", b.Destination, err)
		}
	}
	return nil
}

// forceUnmount detaches whatever is mounted at path (volctl's own target and staging paths,
// when a forced detach runs without the plugin). Lazy (MNT_DETACH), because a plugin that is
// gone may have left the mount busy, and a forced detach must not stop for that.
func forceUnmount(path string) error {
	for {
		mounted, err := mountinfo.Mounted(path)
		if errors.Is(err, os.ErrNotExist) || (err == nil && !mounted) {
			return nil
		}
		if err != nil {
			return fmt.Errorf("%s: %w", path, err)
		}
		if err := unix.Unmount(path, unix.MNT_DETACH); err != nil {
			return fmt.Errorf("unmount %s: %w", path, err)
		}
	}
}
