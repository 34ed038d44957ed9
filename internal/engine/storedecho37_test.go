package engine

import (
	"encoding/base64"
	"encoding/hex"
	"net/url"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"

	"google.golang.org/grpc/codes"

	"github.com/volctl/volctl/internal/csi"
	"github.com/volctl/volctl/internal/spec"
	"github.com/volctl/volctl/internal/store"
)

// TestEchoedSecretsLeaveNoStoredBytes plays a plugin that echoes every secret value and mount
// flag it was sent in every error, as it is and re-encoded, through each engine path that
// records what a plugin said (a claim's and a staging's last error, a plugin's, the event log,
// a snapshot delete's and list's --secret values, which the state never holds), then takes
// every secret out of the state (releases, deletes). The state's files (the database, its WAL
// and shared memory) are then read as raw bytes: no secret may be in them in any form the
// scrubber knows (as it is, quoted, percent-encoded, hex, base64). What the engine shows is
// TestEchoedSecretsScrubbedOnEveryPath's; this is what it stores.
func TestEchoedSecretsLeaveNoStoredBytes(t *testing.T) {
	t.Parallel()
	const (
		secret    = "stored-secret@37a/x y+z?"
		volFlag   = "password=volflag:37a/p@ss"
		claimFlag = "claimflag 37a+q@r"
		other     = "other-volume-secret/37a:s@t"
		delSecret = "snapshot-delete-secret/37a=u"
		lsSecret  = "snapshot-list-secret+37a%v"
	)
	encodings := []func(string) string{url.QueryEscape, url.PathEscape,
		func(s string) string { return hex.EncodeToString([]byte(s)) },
		func(s string) string { return base64.StdEncoding.EncodeToString([]byte(s)) },
		func(s string) string { return base64.RawURLEncoding.EncodeToString([]byte(s)) }}
	h := newHarness(t, nil)
	h.faults.EchoEncoded(encodings...)
	claimWithSecretsToEcho(h, secret, volFlag, other, claimFlag)
	snap, err := h.e.CreateSnapshot(h.ctx, "db", "s1", nil)
	if err != nil {
		t.Fatal(err)
	}

	failing := func(rpc string, c codes.Code, do func() error) {
		t.Helper()
		h.faults.FailAlways(rpc, c)
		err := do()
		h.faults.Clear()
		if err == nil || !strings.Contains(err.Error(), "echo:") {
			t.Errorf("%s: %v, want the echoing plugin's error", rpc, err)
		}
	}
	// A claim's last error (release), a staging's (reconcile), a plugin's (health).
	failing(csi.RPCNodeUnpublishVolume, codes.Unavailable, func() error { _, err := h.e.Release(h.ctx, "db", "a1"); return err })
	h.faults.FailAlways(csi.RPCNodeUnstageVolume, codes.Internal)
	if rep, _ := h.e.Reconcile(h.ctx); rep.OK() {
		t.Errorf("reconcile reports nothing wrong with NodeUnstageVolume failing: %+v", rep)
	}
	h.faults.Clear()
	h.faults.FailAlways(csi.RPCProbe, codes.FailedPrecondition)
	_, _ = h.e.PluginStatus(h.ctx, "mem")
	h.faults.Clear()
	// Events of failed operations, and a snapshot delete and list with secrets of the user's.
	failing(csi.RPCControllerExpandVolume, codes.Internal, func() error { _, err := h.e.ExpandVolume(h.ctx, "other", 4<<20, 0); return err })
	failing(csi.RPCNodePublishVolume, codes.Internal, func() error {
		_, err := h.e.Claim(h.ctx, ClaimRequest{VolumeID: "other", Alloc: "b1"})
		return err
	})
	failing(csi.RPCDeleteVolume, codes.Internal, func() error { return h.e.DeleteVolume(h.ctx, "other") })
	failing(csi.RPCDeleteSnapshot, codes.Internal, func() error {
		return h.e.DeleteSnapshot(h.ctx, "mem", snap.ID, spec.Secrets{"k": delSecret})
	})
	// A list the plugin fails is volctl's records, the plugin's error a warning.
	h.faults.FailAlways(csi.RPCListSnapshots, codes.Internal)
	sl, err := h.e.ListSnapshots(h.ctx, "mem", spec.Secrets{"k": lsSecret})
	h.faults.Clear()
	if w := strings.Join(sl.Warnings, "\n"); err != nil || !strings.Contains(w, "echo:") || strings.Contains(w, lsSecret) {
		t.Errorf("list snapshots = %v, warnings %q: want the echoing plugin's error, scrubbed", err, w)
	}
	evs, err := h.e.Events(h.ctx, 0, EventFilter{})
	if err != nil {
		t.Fatal(err)
	}
	if n := strings.Count(strings.Join(eventMessages(evs), "\n"), "echo:"); n < 3 {
		t.Fatalf("%d events hold the plugin's echo, so little was stored to look in", n)
	}
	var forms []string
	for _, v := range []string{secret, volFlag, claimFlag, other, delSecret, lsSecret} {
		q := strconv.Quote(v)
		forms = append(forms, v, q[1:len(q)-1])
		for _, enc := range encodings {
			forms = append(forms, enc(v))
		}
	}
	if holds(t, h.dir, forms) == "" {
		t.Fatalf("no file of %s holds a secret while the state does: the test reads the wrong files", h.dir)
	}

	// Every secret out of the state: the claims released, the snapshot and the volumes deleted.
	h.release("db", "a1")
	if err := h.e.DeleteSnapshot(h.ctx, "mem", snap.ID, nil); err != nil {
		t.Fatal(err)
	}
	for _, id := range []string{"db", "other"} {
		if err := h.e.DeleteVolume(h.ctx, id); err != nil {
			t.Fatalf("delete %s: %v", id, err)
		}
	}
	// Honest: the deleted volume's past claims are kept, who and how they ended, without flags.
	if err := h.e.store.View(h.ctx, func(tx *store.Tx) error {
		past, err := tx.History("db", 10)
		if err == nil && (len(past) == 0 || past[0].Alloc != "a1" || len(past[0].MountFlags) != 0) {
			t.Errorf("db's past claims after its delete: %+v, want a1's kept without its mount flags", past)
		}
		return err
	}); err != nil {
		t.Fatal(err)
	}
	if err := h.e.Close(); err != nil {
		t.Fatal(err)
	}
	h.e = nil
	if found := holds(t, h.dir, forms); found != "" {
		t.Errorf("the state's files hold %s", found)
	}
}

// eventMessages are the events' messages.
func eventMessages(evs []EventInfo) []string {
	var out []string
	for _, e := range evs {
		out = append(out, e.Message)
	}
	return out
}

// holds names each of forms any of the state's files in dir holds, and the file, or "".
func holds(t *testing.T, dir string, forms []string) string {
	t.Helper()
	var found []string
	for _, name := range []string{store.FileName, store.FileName + "-wal", store.FileName + "-shm"} {
		b, err := os.ReadFile(filepath.Join(dir, name))
		if os.IsNotExist(err) {
			continue
		}
		if err != nil {
			t.Fatal(err)
		}
		for _, f := range forms {
			if strings.Contains(string(b), f) {
				found = append(found, strconv.Quote(f)+" in "+name)
			}
		}
	}
	return strings.Join(found, ", ")
}
