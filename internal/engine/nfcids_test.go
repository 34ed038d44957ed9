package engine

import (
	"database/sql"
	"errors"
	"fmt"
	"path/filepath"
	"strings"
	"testing"
	"unicode"

	"golang.org/x/text/unicode/norm"

	"github.com/volctl/volctl/internal/csi/csitest"
	"github.com/volctl/volctl/internal/spec"
	"github.com/volctl/volctl/internal/store"
)

// renameStored changes a volume's ID in the database behind volctl's back, as an older volctl
// would have stored it (the volume has no claim, staging or snapshot referring to it).
func renameStored(t *testing.T, dir, from, to string) {
	t.Helper()
	db, err := sql.Open("sqlite", "file:"+filepath.Join(dir, store.FileName))
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	if _, err := db.Exec(`UPDATE volumes SET id = ? WHERE id = ?`, to, from); err != nil {
		t.Fatal(err)
	}
}

// Two IDs an older volctl stored that differ only in normalisation (combining marks in either
// order, neither in NFC) both read as the NFC one typed: a command naming it must refuse, naming
// both as stored, rather than act on whichever the table lists first; so must a create of it.
// An ID stored exactly as typed is still the one meant, whatever else normalises alike.
func TestStoredIDsNormalisingAlikeAreRefused(t *testing.T) {
	t.Parallel()
	const nfc, one, two = "v\u1ead", "va\u0323\u0302", "va\u0302\u0323"
	h := newHarness(t, nil)
	h.create(volume("seed-1"))
	h.create(volume("seed-2"))
	renameStored(t, h.dir, "seed-1", one)
	renameStored(t, h.dir, "seed-2", two)
	_, err := h.e.Volume(h.ctx, nfc)
	if !errors.Is(err, ErrInvalid) || !strings.Contains(fmt.Sprint(err), fmt.Sprintf("%+q", one)) ||
		!strings.Contains(fmt.Sprint(err), fmt.Sprintf("%+q", two)) {
		t.Errorf("volume %+q with %+q and %+q stored: %v, want a refusal naming both", nfc, one, two, err)
	}
	if _, err := h.e.Claim(h.ctx, ClaimRequest{VolumeID: nfc, Alloc: "a"}); !errors.Is(err, ErrInvalid) {
		t.Errorf("claim of %+q with %+q and %+q stored: %v, want a refusal", nfc, one, two, err)
	}
	if live := append(h.liveClaims(one), h.liveClaims(two)...); len(live) != 0 {
		t.Errorf("after the refused claim, live claims: %+v", live)
	}
	if _, err := h.e.CreateVolume(h.ctx, volume(nfc)); !errors.Is(err, ErrInvalid) {
		t.Errorf("create of %+q with %+q and %+q stored: %v, want a refusal", nfc, one, two, err)
	}
	h.create(volume("seed-3"))
	renameStored(t, h.dir, "seed-3", nfc)
	if v, err := h.e.Volume(h.ctx, nfc); err != nil || v.ID != nfc {
		t.Errorf("volume %+q, stored as typed beside %+q and %+q: %+q, %v", nfc, one, two, v.ID, err)
	}
}

// A spec names its volume in NFC. Created or registered again while an older volctl's volume
// of that name is stored decomposed, it must meet that volume, not add a second one that
// differs from it only in normalisation (for a create, a second volume on the storage).
func TestSpecNamingAVolumeStoredDecomposedMeetsIt(t *testing.T) {
	t.Parallel()
	const pre, dec = "caf\u00e9", "cafe\u0301"
	h := newHarness(t, nil)
	named := func(id string) spec.Volume { v := volume(id); v.Name = "cafe"; return v }
	h.create(named(dec))
	onStorage := func() int {
		t.Helper()
		ids, err := csitest.VolumeIDs(h.ctx, h.socket, "")
		if err != nil {
			t.Fatal(err)
		}
		return len(ids)
	}
	before := onStorage()
	v, err := h.e.CreateVolume(h.ctx, named(pre))
	if err != nil || v.ID != dec {
		t.Errorf("create of %+q with %+q stored: %+q, %v; want the stored volume", pre, dec, v.ID, err)
	}
	if n := onStorage(); n != before {
		t.Errorf("create of %+q with %+q stored made a volume on the storage: %d, was %d", pre, dec, n, before)
	}
	reg := named(pre)
	reg.ExternalID = v.ExternalID
	reg.Context = v.Context
	if v, err := h.e.RegisterVolume(h.ctx, reg); err != nil || v.ID != dec {
		t.Errorf("register of %+q with %+q stored: %+q, %v; want the stored volume", pre, dec, v.ID, err)
	}
	if all, err := h.e.Volumes(h.ctx); err != nil || len(all) != 1 {
		t.Errorf("volumes after create and register of %+q: %+v, %v; want only %+q", pre, all, err, dec)
	}
}

// mayHaveOtherForm skips the read of every key for ASCII IDs without "K", ";" and "`": that
// holds only if no other rune normalises (NFC) into ASCII but the three it names.
func TestOnlyThreeRunesNormaliseToASCII(t *testing.T) {
	t.Parallel()
	for r := rune(0x80); r <= unicode.MaxRune; r++ {
		if r >= 0xd800 && r <= 0xdfff {
			continue
		}
		s := norm.NFC.String(string(r))
		if !mayHaveOtherForm(s) {
			t.Errorf("%U normalises to %q, which mayHaveOtherForm says no other string can", r, s)
		}
	}
}

// A plugin registration (volctl plugin register --id, the agent's declared plugins) and a group
// run name their plugin and group in NFC. With an older volctl's plugin and group of that name
// stored decomposed, they must act on the stored ones, not add a second plugin row and a second
// group whose alloc claims the volume again beside the stored group's claim.
func TestPluginAndGroupStoredDecomposedAreNotAddedTwice(t *testing.T) {
	t.Parallel()
	const pre, dec = "caf\u00e9", "cafe\u0301"
	h := newHarness(t, nil)
	h.registerPlugin(dec, h.socket)
	if p := h.registerPlugin(pre, h.socket); p.ID != dec {
		t.Errorf("register of plugin %+q with %+q stored: %+q, want the stored plugin", pre, dec, p.ID)
	}
	if ps, err := h.e.Plugins(h.ctx); err != nil || len(ps) != 2 {
		t.Errorf("plugins after registering %+q with %+q stored: %+v, %v; want mem and %+q", pre, dec, ps, err, dec)
	}

	h.create(volume("v", capab(spec.MultiNodeMultiWriter)))
	group := func(name string) spec.Group {
		return spec.Group{Name: name, Count: 1, Volumes: []spec.VolumeRequest{{Name: "d", Type: "csi", Source: "v",
			AccessMode: spec.MultiNodeMultiWriter, AttachmentMode: spec.FileSystem}}}
	}
	if _, err := h.e.RunGroup(h.ctx, group(dec)); err != nil {
		t.Fatal(err)
	}
	if g, err := h.e.RunGroup(h.ctx, group(pre)); err != nil || g.Name != dec {
		t.Errorf("run of group %+q with %+q stored: %+q, %v; want the stored group", pre, dec, g.Name, err)
	}
	if gs, err := h.e.Groups(h.ctx, ""); err != nil || len(gs) != 1 {
		t.Errorf("groups after running %+q with %+q stored: %+v, %v; want only %+q", pre, dec, gs, err, dec)
	}
	if live := h.liveClaims("v"); len(live) != 1 {
		t.Errorf("claims of v after running %+q with %+q stored: %+v; want only the stored group's", pre, dec, live)
	}
}

// A spec reads its strings in NFC. Its name, namespace and plugin_id, which cannot change, are
// the stored volume's when an older volctl stored them decomposed: created or registered again,
// the volume must be met, not refused as a change of name, nor its plugin as unregistered; and
// the stored spelling is kept.
func TestSpecNamesStoredDecomposedAreNoChange(t *testing.T) {
	t.Parallel()
	const pre, dec = "caf\u00e9", "cafe\u0301"
	h := newHarness(t, nil)
	h.registerPlugin(dec, h.socket)
	named := func(id, text string) spec.Volume {
		v := volume(id)
		v.Name, v.Namespace, v.PluginID = text, text, text
		return v
	}
	h.create(named("v", dec))
	v, err := h.e.CreateVolume(h.ctx, named("v", pre))
	if err != nil {
		t.Fatalf("create of v naming %+q, stored as %+q: %v", pre, dec, err)
	}
	reg := named("v", pre)
	reg.ExternalID = v.ExternalID
	reg.Context = v.Context
	if _, err := h.e.RegisterVolume(h.ctx, reg); err != nil {
		t.Errorf("register of v naming %+q, stored as %+q: %v", pre, dec, err)
	}
	var got []string
	h.update(func(tx *store.Tx) error {
		old, err := tx.Volumes().Get("v")
		got = []string{old.Name, old.Namespace, old.PluginID}
		return err
	})
	for _, s := range got {
		if s != dec {
			t.Errorf("stored name, namespace, plugin_id: %+q; want each kept as %+q", got, dec)
			break
		}
	}
	other := named("v", pre)
	other.Name = "cafe"
	if _, err := h.e.CreateVolume(h.ctx, other); !errors.Is(err, ErrConflict) {
		t.Errorf("create of v named %q, stored as %+q: %v; want a refused change", other.Name, dec, err)
	}
}

// The event log keeps what an older volctl stored decomposed after the volume is gone, and an
// alloc is in no table of its own: events --volume and --alloc, typed (NFC), must still find
// them, and must not answer with nothing, as for a volume and alloc that never existed.
func TestEventsStoredDecomposedAreFoundInNFC(t *testing.T) {
	t.Parallel()
	const pre, dec = "caf\u00e9", "cafe\u0301"
	h := newHarness(t, nil)
	h.create(volume(dec))
	h.claim(ClaimRequest{VolumeID: dec, Alloc: "web-" + dec})
	h.release(dec, "web-"+dec)
	if err := h.e.DeleteVolume(h.ctx, dec); err != nil {
		t.Fatal(err)
	}
	for _, f := range []EventFilter{{VolumeID: pre}, {Alloc: "web-" + pre}, {VolumeID: pre, Alloc: "web-" + pre, Kind: "release"}} {
		evs, err := h.e.Events(h.ctx, 0, f)
		if err != nil || len(evs) == 0 {
			t.Errorf("events %+v, with the volume and alloc stored as %+q: %d, %v; want theirs", f, dec, len(evs), err)
		}
		for _, ev := range evs {
			if f.VolumeID != "" && ev.VolumeID != dec || f.Alloc != "" && ev.Alloc != "web-"+dec {
				t.Errorf("events %+v: %+v, not the stored volume's or alloc's", f, ev)
			}
		}
	}
	if evs, err := h.e.Events(h.ctx, 0, EventFilter{VolumeID: "caf\u00e8"}); err != nil || len(evs) != 0 {
		t.Errorf("events of a volume that never was: %+v, %v; want none", evs, err)
	}
}

// TestFollowedEventsFilterReadsOnlyNewRows: `events --follow --alloc wéb-0` polls Events with
// AfterID every 500 ms; when nothing new matches, the filter's other stored forms are looked
// for. That look reads the events after AfterID only, not the log's column (3,000 allocs
// here: one row each, every poll), and still finds a new event naming the alloc decomposed.
func TestFollowedEventsFilterReadsOnlyNewRows(t *testing.T) {
	t.Parallel()
	const pre, dec = "w\u00e9b-0", "we\u0301b-0"
	h := newHarness(t, nil)
	h.update(func(tx *store.Tx) error {
		for i := range 3000 {
			if err := tx.Events().Append(&store.Event{Kind: "claim", VolumeID: "v", Alloc: fmt.Sprintf("job-%d", i), Message: "x"}); err != nil {
				return err
			}
		}
		return nil
	})
	newest, err := h.e.Events(h.ctx, 1, EventFilter{})
	if err != nil || len(newest) != 1 {
		t.Fatal(newest, err)
	}
	last := newest[0].ID
	before := h.e.store.RowsRead()
	for range 3 { // three polls finding nothing
		if evs, err := h.e.Events(h.ctx, 0, EventFilter{Alloc: pre, AfterID: last}); err != nil || len(evs) != 0 {
			t.Fatalf("poll: %v, %v; want nothing", evs, err)
		}
	}
	if rows := h.e.store.RowsRead() - before; rows > 3 {
		t.Errorf("three polls of an alloc filter finding nothing read %d rows; want none but the new events' (the log holds 3,000 allocs)", rows)
	}
	h.update(func(tx *store.Tx) error {
		return tx.Events().Append(&store.Event{Kind: "claim", VolumeID: "v", Alloc: dec, Message: "new"})
	})
	evs, err := h.e.Events(h.ctx, 0, EventFilter{Alloc: pre, AfterID: last})
	if err != nil || len(evs) != 1 || evs[0].Alloc != dec {
		t.Errorf("poll after an event naming %+q: %+v, %v; want that event", dec, evs, err)
	}
}
