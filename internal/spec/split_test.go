package spec

import (
	"os"
	"path/filepath"
	"testing"
	"time"
)

// A plugin split in two processes is declared as Nomad declares it, one block per half with the
// same plugin ID, and comes out as the one plugin volctl keeps: both sockets, one timeout.
func TestSplitHalvesAreJoinedIntoOnePlugin(t *testing.T) {
	path := filepath.Join("..", "..", "fixtures", "valid", "plugin-split-halves.hcl")
	src, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	ps, diags := NewParser().ParsePlugins(path, src)
	if diags.HasErrors() {
		t.Fatalf("diagnostics: %v", diags)
	}
	want := Plugin{ID: "ebs", Type: PluginMonolith, ControllerSocket: "/run/csi/ebs-controller.sock",
		NodeSocket: "/run/csi/ebs-node.sock", Timeout: 5 * time.Minute}
	if len(ps) != 1 || *ps[0] != want {
		t.Fatalf("plugins = %+v; want one: %+v", ps, want)
	}
	if err := ps[0].Validate(); err != nil {
		t.Fatalf("the joined plugin does not validate: %v", err)
	}

	// Either order, and the node half's socket given as node_socket.
	node := Plugin{ID: "ebs", Type: PluginNode, NodeSocket: "/run/csi/ebs-node.sock"}
	ctrl := Plugin{ID: "ebs", Type: PluginController, ControllerSocket: "/run/csi/ebs-controller.sock", Timeout: 5 * time.Minute}
	if got, problem := JoinSplit(node, ctrl); problem != "" || got != want {
		t.Fatalf("JoinSplit(node, controller) = %+v, %q", got, problem)
	}
	if _, problem := JoinSplit(ctrl, ctrl); problem == "" {
		t.Fatal("two controller halves were joined")
	}
}
