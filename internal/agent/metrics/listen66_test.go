package metrics

import (
	"net"
	"strings"
	"testing"
)

// Listen added "(is another agent or exporter on that port?)" to every failure of
// net.Listen, whatever it was. A port out of range, or a host address this machine does not
// have (a typo in --metrics-addr, an address of another host's interface), is no port another
// process holds: the hint sends the operator looking for a process (ss -ltnp) that does not
// exist, while the error's cause is the address itself. Only an address in use has that hint.
// Found by helper review66.
func TestListenHintsAnotherHolderOnlyWhenTheAddressIsInUse(t *testing.T) {
	for _, addr := range []string{
		"127.0.0.1:65536", // no such port
		"192.0.2.1:9808",  // TEST-NET-1: no interface of this host has it
	} {
		s, err := Listen(addr)
		if err == nil {
			s.Close()
			t.Logf("Listen(%q) succeeded on this host; nothing to check", addr)
			continue
		}
		if strings.Contains(err.Error(), "another agent or exporter") {
			t.Errorf("Listen(%q): %v\nwant no hint that another process holds the port: the address itself is refused", addr, err)
		}
	}
	held, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer held.Close()
	if s, err := Listen(held.Addr().String()); err == nil {
		s.Close()
		t.Errorf("Listen(%s), an address another listener holds, succeeded", held.Addr())
	} else if !strings.Contains(err.Error(), "another agent or exporter on that port") {
		t.Errorf("Listen(%s), an address another listener holds: %v\nwant the hint that another process holds it", held.Addr(), err)
	}
}
