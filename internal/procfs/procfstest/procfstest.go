// Package procfstest makes, of a test binary, a process whose first thread has exited while
// its others run (package procfs).
package procfstest

import (
	"fmt"
	"net"
	"os"
	"syscall"

	"github.com/volctl/volctl/internal/crash"
)

// ServeThenEndFirstThread listens on the unix socket at path, answers every connection there
// (accepts, keeps it open), prints "ready" and ends the calling thread alone, as a C plugin
// whose main calls pthread_exit does: /proc then shows the process a zombie while its other
// threads hold the socket and answer on it. Called on the first thread (from init, where the
// runtime keeps the main goroutine on it, or after runtime.LockOSThread there), the thread
// that ends is the first. It does not return; a failure to listen exits the process with 1.
func ServeThenEndFirstThread(path string) {
	lis, err := net.Listen("unix", path)
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
	crash.Go(func() {
		var held []net.Conn // kept open: the process serves them until it ends
		for {
			c, err := lis.Accept()
			if err != nil {
				return
			}
			held = append(held, c)
		}
	})
	fmt.Println("ready")
	syscall.RawSyscall(syscall.SYS_EXIT, 0, 0, 0)
}
