package engine

import (
	"database/sql"
	"encoding/json"
	"path/filepath"
	"strings"
	"testing"

	"github.com/volctl/volctl/internal/csi"
	"github.com/volctl/volctl/internal/store"
)

// A fingerprint recorded in another boot, whose socket files and listeners read now as they did
// then: after a reboot, a plugin's socket made again at its path may get the inode it had (a
// tmpfs numbers its inodes from boot), the same change time where the clock has no battery and
// starts where it started, and its listener the same pid and start time. Simulated here by the
// record itself: the plugin as it runs now, its row rewritten as the instance before the reboot
// recorded it (another node ID), in another boot. The next process must fingerprint the plugin
// again, not take the instance on the socket now for the one the record names: before, it
// reused the record (no RPC), and a claim sent ControllerPublishVolume for the node the plugin
// served before the reboot.
func TestFingerprintOfAnotherBootIsNotReused(t *testing.T) {
	t.Parallel()
	h := newHarness(t, nil)
	h.create(volume("v"))
	rewriteRecordedSockets(t, h, "node-before-reboot", func(s map[string]any) {
		s["boot"] = "00000000-0000-4000-8000-000000000000" // another boot's
	})

	h.open(Config{}) // the next process
	infos := h.mem.CallCount(csi.RPCNodeGetInfo)
	h.claim(ClaimRequest{VolumeID: "v", Alloc: "a"})
	if h.mem.CallCount(csi.RPCNodeGetInfo) == infos {
		t.Error("the plugin was not fingerprinted again: a record of another boot was taken for the instance on the socket now")
	}
	for _, c := range h.mem.Calls() {
		if r, ok := c.Request.(interface{ GetNodeId() string }); ok && c.RPC == csi.RPCControllerPublishVolume && r.GetNodeId() != "node-1" {
			t.Errorf("ControllerPublishVolume sent for node %q, the plugin's node before the reboot; it serves node-1", r.GetNodeId())
		}
	}
	if got := h.storedPlugin("mem").Fingerprint.NodeID; got != "node-1" {
		t.Errorf("stored node ID %q after the claim; want node-1, the plugin's now", got)
	}
}

// The honest case: a fingerprint recorded in this boot, the plugin unchanged, is reused by the
// next process with no RPC.
func TestFingerprintOfThisBootIsReused(t *testing.T) {
	t.Parallel()
	h := newHarness(t, nil)
	h.create(volume("v"))
	if bootID() == "" {
		t.Skip("no boot ID to read (/proc/sys/kernel/random/boot_id): nothing tells one boot from another")
	}
	for _, s := range h.storedPlugin("mem").Fingerprint.Sockets {
		if s.Boot != bootID() {
			t.Errorf("socket %s recorded in boot %q; this boot is %q", s.Path, s.Boot, bootID())
		}
	}
	h.open(Config{})
	infos := h.mem.CallCount(csi.RPCNodeGetInfo)
	h.claim(ClaimRequest{VolumeID: "v", Alloc: "a"})
	if n := h.mem.CallCount(csi.RPCNodeGetInfo) - infos; n != 0 {
		t.Errorf("the unchanged plugin was fingerprinted again (%d NodeGetInfo) in the boot its record was taken in", n)
	}
}

// rewriteRecordedSockets rewrites plugin mem's recorded sockets in h's state as edit leaves
// each, and its node ID when nodeID is not empty: the record as another boot, or a volctl
// before round 33, left it.
func rewriteRecordedSockets(t *testing.T, h *harness, nodeID string, edit func(s map[string]any)) {
	t.Helper()
	db, err := sql.Open("sqlite", "file:"+filepath.Join(h.dir, store.FileName))
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	var raw string
	if err := db.QueryRow(`SELECT fingerprint_sockets FROM plugins WHERE id = 'mem'`).Scan(&raw); err != nil {
		t.Fatal(err)
	}
	var sockets []map[string]any
	dec := json.NewDecoder(strings.NewReader(raw))
	dec.UseNumber() // a change time in nanoseconds is past a float64's integers
	if err := dec.Decode(&sockets); err != nil || len(sockets) == 0 {
		t.Fatalf("fingerprint_sockets %q: %v", raw, err)
	}
	for _, s := range sockets {
		edit(s)
	}
	b, _ := json.Marshal(sockets)
	q, args := `UPDATE plugins SET fingerprint_sockets = ? WHERE id = 'mem'`, []any{string(b)}
	if nodeID != "" {
		q, args = `UPDATE plugins SET fingerprint_sockets = ?, node_id = ? WHERE id = 'mem'`, append(args, nodeID)
	}
	if _, err := db.Exec(q, args...); err != nil {
		t.Fatal(err)
	}
}
