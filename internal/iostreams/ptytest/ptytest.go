// Package ptytest opens pseudo-terminals for tests that need a real terminal on a process's
// stdin and stdout: what a program writes to it (a colour query), how soon, and whether it
// reads the keys typed into it.
package ptytest

import (
	"fmt"
	"os"
	"strconv"

	"golang.org/x/sys/unix"
)

// Open returns a new pty's controller side (what the terminal emulator holds) and its
// terminal side (what the program gets as stdin and stdout), sized cols x rows.
func Open(cols, rows int) (controller, term *os.File, err error) {
	controller, err = os.OpenFile("/dev/ptmx", os.O_RDWR|unix.O_NOCTTY, 0)
	if err != nil {
		return nil, nil, fmt.Errorf("open /dev/ptmx: %w", err)
	}
	fd := int(controller.Fd())
	if err := unix.IoctlSetPointerInt(fd, unix.TIOCSPTLCK, 0); err != nil {
		controller.Close()
		return nil, nil, fmt.Errorf("unlock pty: %w", err)
	}
	n, err := unix.IoctlGetInt(fd, unix.TIOCGPTN)
	if err != nil {
		controller.Close()
		return nil, nil, fmt.Errorf("pty number: %w", err)
	}
	name := "/dev/pts/" + strconv.Itoa(n)
	term, err = os.OpenFile(name, os.O_RDWR|unix.O_NOCTTY, 0)
	if err != nil {
		controller.Close()
		return nil, nil, fmt.Errorf("open %s: %w", name, err)
	}
	ws := &unix.Winsize{Col: uint16(cols), Row: uint16(rows)}
	if err := unix.IoctlSetWinsize(int(term.Fd()), unix.TIOCSWINSZ, ws); err != nil {
		controller.Close()
		term.Close()
		return nil, nil, fmt.Errorf("size %s: %w", name, err)
	}
	return controller, term, nil
}
