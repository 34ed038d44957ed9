package csi

import (
	"fmt"
	"reflect"
	"strings"
	"testing"

	csipb "github.com/container-storage-interface/spec/lib/go/csi"
	"google.golang.org/grpc"
)

// TestRPCTable: every RPC the client calls has its facts in rpcTable, and the table holds no
// RPC the client does not call; a hint names no placeholder hint() does not fill in.
func TestRPCTable(t *testing.T) {
	for _, rpc := range RPCs {
		if _, ok := rpcTable[rpc]; !ok {
			t.Errorf("%s has no entry in rpcTable", rpc)
		}
	}
	if len(rpcTable) != len(RPCs) {
		t.Errorf("rpcTable has %d RPCs, RPCs %d", len(rpcTable), len(RPCs))
	}
	for rpc, f := range rpcTable {
		if f.notFoundDone && !f.long {
			t.Errorf("%s: a teardown RPC (NOT_FOUND is done) with the short timeout", rpc)
		}
		for code := range f.hints {
			if h := hint(rpc, code, "the plugin", "/s", 1); strings.Contains(h, "{") {
				t.Errorf("%s %v: hint %q keeps a placeholder", rpc, code, h)
			}
		}
	}
	for code := range codeHints {
		if h := hint("X", code, "the plugin", "/s", 1); strings.Contains(h, "{") {
			t.Errorf("%v: hint %q keeps a placeholder", code, h)
		}
	}
}

// TestRPCTableServices: rpcTable has exactly one entry per RPC the client can send (each of
// its methods named after a CSI RPC), and files each under the service that declares it in the
// CSI protobuf (csipb's generated service descriptors), which decides the socket it goes to.
func TestRPCTableServices(t *testing.T) {
	declared := map[string]Service{} // method name -> the service the CSI protobuf declares it in
	for svc, desc := range map[Service]*grpc.ServiceDesc{
		ServiceIdentity:   &csipb.Identity_ServiceDesc,
		ServiceController: &csipb.Controller_ServiceDesc,
		ServiceNode:       &csipb.Node_ServiceDesc,
	} {
		for _, m := range desc.Methods {
			declared[m.MethodName] = svc
		}
	}
	sent := map[string]bool{} // the client's methods that send the RPC they are named after
	client := reflect.TypeFor[*Client]()
	for i := range client.NumMethod() {
		if name := client.Method(i).Name; declared[name] != 0 {
			sent[name] = true
		}
	}
	if len(sent) == 0 {
		t.Fatal("found no client method named after a CSI RPC")
	}
	for rpc := range sent {
		if _, ok := rpcTable[rpc]; !ok {
			t.Errorf("the client sends %s, which has no entry in rpcTable", rpc)
		}
	}
	for rpc, f := range rpcTable {
		if !sent[rpc] {
			t.Errorf("rpcTable has %s, which the client has no method to send", rpc)
		}
		want, ok := declared[rpc]
		if !ok {
			t.Errorf("rpcTable has %s, which the CSI identity, controller and node services do not declare", rpc)
			continue
		}
		if f.service != want {
			t.Errorf("rpcTable files %s under the %v service; the CSI protobuf declares it in %v", rpc, f.service, want)
		}
		// The service decides the socket: check that endpointFor reads it.
		ctl, node := &endpoint{socket: "/controller.sock"}, &endpoint{socket: "/node.sock"}
		c := &Client{controller: ctl, node: node}
		wantEP := map[Service]*endpoint{ServiceIdentity: ctl, ServiceController: ctl, ServiceNode: node}[want]
		if ep, err := c.endpointFor(rpc); err != nil || ep != wantEP {
			got := fmt.Sprint(err)
			if ep != nil {
				got = ep.socket
			}
			t.Errorf("%s goes to %s, want %s", rpc, got, wantEP.socket)
		}
	}
}
