package agent

import (
	"fmt"
	"net"
	"os"
)

// SdNotify sends state ("READY=1", "STOPPING=1") to the service manager over the unix datagram
// socket $NOTIFY_SOCKET names: systemd's notify protocol (sd_notify(3)), which a unit with
// Type=notify waits on. Without $NOTIFY_SOCKET it does nothing. A name starting with '@' is a
// socket in the abstract namespace; Go's net package maps the '@' to the leading NUL byte.
func SdNotify(state string) error {
	name := os.Getenv("NOTIFY_SOCKET")
	if name == "" {
		return nil
	}
	if name[0] != '/' && name[0] != '@' {
		return fmt.Errorf("NOTIFY_SOCKET=%q: not an absolute path or an abstract socket (@name); is the service manager's environment intact?", name)
	}
	conn, err := net.DialUnix("unixgram", nil, &net.UnixAddr{Name: name, Net: "unixgram"})
	if err != nil {
		return fmt.Errorf("notify socket %s: %w", name, err)
	}
	defer conn.Close()
	if _, err := conn.Write([]byte(state)); err != nil {
		return fmt.Errorf("notify socket %s: %w", name, err)
	}
	return nil
}
