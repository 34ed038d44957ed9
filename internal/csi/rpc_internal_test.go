package csi

import (
	"strings"
	"testing"
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
			if h := hint(rpc, code, "/s", 1); strings.Contains(h, "{") {
				t.Errorf("%s %v: hint %q keeps a placeholder", rpc, code, h)
			}
		}
	}
	for code := range codeHints {
		if h := hint("X", code, "/s", 1); strings.Contains(h, "{") {
			t.Errorf("%v: hint %q keeps a placeholder", code, h)
		}
	}
}
