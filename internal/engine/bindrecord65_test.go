package engine

import (
	"database/sql"
	"path/filepath"
	"testing"

	"github.com/volctl/volctl/internal/hostpath/hostpathtest"
	"github.com/volctl/volctl/internal/spec"
	"github.com/volctl/volctl/internal/store"
)

// setRawBindMounts writes, with SQL of its own, what alloc's claim of volume "data" records in
// its bind_mounts column.
func setRawBindMounts(t *testing.T, h *hostpathEngine, alloc string, raw any) {
	t.Helper()
	db, err := sql.Open("sqlite", "file:"+filepath.Join(h.state, store.FileName)+"?_pragma=busy_timeout(5000)")
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	res, err := db.Exec(`UPDATE claims SET bind_mounts = ? WHERE volume_id = 'data' AND alloc = ?`, raw, alloc)
	if err != nil {
		t.Fatal(err)
	}
	if n, _ := res.RowsAffected(); n != 1 {
		t.Fatalf("%d claims of alloc %q updated", n, alloc)
	}
}

// The record of a claim's binds' mounts (bind_mounts, migration 0029) is progress: a claim with
// none, as every claim an older volctl recorded has, is released as before the record was kept
// (bindrecord.go). A record volctl cannot decode (a column damaged, or written by a build of
// another format) is no more than none: before, every read of the claim, and of each claim of
// its volume, failed on it, so neither the claim's release nor a group stop nor a detach could
// run, and the volume stayed bound and claimed for good. Real mounts, as root. Found by helper
// review65.
func TestUndecodableBindRecordDoesNotMakeAClaimUnreleasable(t *testing.T) {
	t.Parallel()
	for name, raw := range map[string]any{
		"empty text":     "",
		"truncated JSON": `{"boot":"`,
		"wrong type":     `{"boot":5,"mntns":"x","at":[]}`,
	} {
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			h := newSharedVolumeEngine(t, spec.MultiNodeSingleWriter)
			dest := filepath.Join(hostpathtest.MountDir(t), "data")
			if _, err := h.e.RunGroup(h.ctx, sharedDestGroup("web", 1, false, dest)); err != nil {
				t.Fatal(err)
			}
			setRawBindMounts(t, h, "web[0]", raw)
			_, err := h.e.StopGroup(h.ctx, "web")
			if err != nil {
				t.Errorf("stop group web, its claim's bind_mounts %q undecodable: %v; want it released as a claim with no record", raw, err)
			}
			// What the stop's error advises.
			rep, rerr := h.e.Reconcile(h.ctx)
			if rerr != nil || !rep.OK() {
				t.Errorf("reconcile, as the stop advised: %+v, %v; want the release finished", rep.Problems, rerr)
			}
			if hostpathtest.Mounted(t, dest) {
				t.Errorf("%s still bound after the stop and a reconcile", dest)
			}
		})
	}
}
