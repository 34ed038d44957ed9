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

// A fingerprint an older volctl recorded (no boot with its sockets) is fingerprinted again by
// the first process that reads it, once: the new record carries this boot, and the process
// after reuses it with no RPC. Were the boot not written back, every process would fingerprint
// the plugin again for good.
func TestFingerprintWithNoBootRecordedIsTakenAgainOnceThenReused(t *testing.T) {
	if bootID() == "" {
		t.Skip("no boot ID to read (/proc/sys/kernel/random/boot_id): none is recorded nor compared")
	}
	h := newHarness(t, nil)
	h.create(volume("v"))
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
	dec.UseNumber()
	if err := dec.Decode(&sockets); err != nil || len(sockets) == 0 {
		t.Fatalf("fingerprint_sockets %q: %v", raw, err)
	}
	for _, s := range sockets {
		if s["boot"] != bootID() {
			t.Fatalf("socket recorded with boot %v; this boot is %q", s["boot"], bootID())
		}
		delete(s, "boot") // as a volctl before round 33 recorded it
	}
	b, _ := json.Marshal(sockets)
	if _, err := db.Exec(`UPDATE plugins SET fingerprint_sockets = ? WHERE id = 'mem'`, string(b)); err != nil {
		t.Fatal(err)
	}

	h.open(Config{})
	infos := h.mem.CallCount(csi.RPCNodeGetInfo)
	h.claim(ClaimRequest{VolumeID: "v", Alloc: "a"})
	if h.mem.CallCount(csi.RPCNodeGetInfo) == infos {
		t.Error("a record with no boot was reused: nothing says it was taken in this boot")
	}
	for _, s := range h.storedPlugin("mem").Fingerprint.Sockets {
		if s.Boot != bootID() {
			t.Errorf("socket %s recorded again with boot %q; this boot is %q", s.Path, s.Boot, bootID())
		}
	}
	h.open(Config{}) // the process after
	infos = h.mem.CallCount(csi.RPCNodeGetInfo)
	h.release("v", "a")
	if n := h.mem.CallCount(csi.RPCNodeGetInfo) - infos; n != 0 {
		t.Errorf("the plugin was fingerprinted again (%d NodeGetInfo) for a release by the process after the one that recorded this boot", n)
	}
}
