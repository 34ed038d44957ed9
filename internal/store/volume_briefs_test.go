package store

import (
	"fmt"
	"reflect"
	"testing"
	"time"

	"github.com/volctl/volctl/internal/spec"
)

// Briefs (EachBrief) counts claims in SQL; the counts must be what the full rows say: read and write
// claims, and unsettled as the negation of Claim.AtRest.
func TestVolumeBriefsMatchTheFullRows(t *testing.T) {
	t.Parallel()
	s := newStore(t)
	mode := spec.Capability{AccessMode: spec.MultiNodeMultiWriter, AttachmentMode: spec.FileSystem}
	update(t, s, func(tx *Tx) error {
		for _, id := range []string{"a", "b", "c", "d"} {
			v := Volume{ID: id, Namespace: "default", Name: "name-" + id, PluginID: "hp", State: VolumeReady,
				CapacityBytes: 1 << 30, Capabilities: []spec.Capability{mode},
				Parameters: map[string]string{"k": "v"}, Secrets: spec.Secrets{"t": "s"}}
			// Where each is accessible from: what the plugin said (b, and d, whose request it
			// overrides), what its request requires (c), or everywhere (a).
			zone := []spec.Topology{{Segments: map[string]string{"zone": id}}}
			switch id {
			case "b":
				v.AccessibleTopology = zone
			case "c":
				v.TopologyRequest = &spec.TopologyRequest{Required: zone, Preferred: []spec.Topology{{Segments: map[string]string{"zone": "x"}}}}
			case "d":
				v.AccessibleTopology, v.TopologyRequest = zone, &spec.TopologyRequest{Required: []spec.Topology{{Segments: map[string]string{"zone": "x"}}}}
			}
			if err := tx.Volumes().Insert(&v); err != nil {
				return err
			}
		}
		claims := []struct {
			vol, alloc string
			m          ClaimMode
			state      ClaimState
			releasing  bool
			reconcile  bool
		}{
			{"a", "w", ClaimWrite, ClaimPublished, false, false},
			{"a", "r1", ClaimRead, ClaimPublished, false, false},
			{"a", "r2", ClaimRead, ClaimNodeStaged, false, false},
			{"a", "r3", ClaimRead, ClaimPublished, true, false},
			{"a", "r4", ClaimRead, ClaimPublished, false, true},
			{"b", "w", ClaimWrite, ClaimUnpublishing, true, true},
		}
		for i, c := range claims {
			cl := Claim{VolumeID: c.vol, Alloc: c.alloc, Mode: c.m, AccessMode: mode.AccessMode, AttachmentMode: mode.AttachmentMode,
				State: c.state, Releasing: c.releasing, NeedsReconcile: c.reconcile, TargetPath: fmt.Sprintf("/t/%d", i)}
			if err := tx.Claims().Insert(&cl); err != nil {
				return err
			}
			if err := tx.Claims().Update(&cl); err != nil {
				return err
			}
		}
		return nil
	})

	var (
		briefs []VolumeBrief
		vols   []Volume
		claims []Claim
	)
	view(t, s, func(tx *Tx) error {
		var err error
		if briefs, err = (volumes{tx}).Briefs(); err != nil {
			return err
		}
		if vols, err = tx.Volumes().List(VolumeFilter{}); err != nil {
			return err
		}
		claims, err = tx.Claims().ListAll()
		return err
	})
	var want []VolumeBrief
	for _, v := range vols {
		b := VolumeBrief{ID: v.ID, Namespace: v.Namespace, Name: v.Name, PluginID: v.PluginID, State: v.State,
			AccessMode: v.AccessMode, AttachmentMode: v.AttachmentMode, CapacityBytes: v.CapacityBytes, CreatedAt: v.CreatedAt,
			Topologies: briefWant(v)}
		for _, c := range claims {
			if c.VolumeID != v.ID {
				continue
			}
			if c.Mode == ClaimWrite {
				b.WriteClaims++
			} else {
				b.ReadClaims++
			}
			if !c.AtRest() {
				b.Unsettled++
			}
		}
		want = append(want, b)
	}
	if !reflect.DeepEqual(briefs, want) {
		t.Fatalf("Briefs() =\n%+v\nwant (from the full rows)\n%+v", briefs, want)
	}
	if briefs[0].ReadClaims != 4 || briefs[0].WriteClaims != 1 || briefs[0].Unsettled != 3 || briefs[2].ReadClaims+briefs[2].WriteClaims != 0 {
		t.Errorf("counts = %+v", briefs)
	}
}

func TestVolumeBriefsEmpty(t *testing.T) {
	t.Parallel()
	s := newStore(t)
	view(t, s, func(tx *Tx) error {
		b, err := volumes{tx}.Briefs()
		if err != nil || b == nil || len(b) != 0 {
			t.Errorf("Briefs() = %#v, %v; want an empty, non-nil slice", b, err)
		}
		return err
	})
}

// EachBrief counts the claims apart from the volumes and merges the two lists by ID: the merge
// must meet every claimed volume whatever its ID sorts like (bytewise, as SQLite's BINARY
// collation), claimed volumes first, last and between unclaimed ones.
func TestVolumeBriefsMergeClaimsByBytewiseID(t *testing.T) {
	t.Parallel()
	s := newStore(t)
	ids := []string{"B", "a", "a-b", "a.b", "ab", "Z", "~", "é", "a\u00ff", "ä", "0", "日本", "b", "bb"}
	claimed := map[string]int{"0": 1, "B": 2, "a-b": 1, "ab": 3, "~": 1, "ä": 2, "日本": 1}
	mode := spec.Capability{AccessMode: spec.MultiNodeMultiWriter, AttachmentMode: spec.FileSystem}
	update(t, s, func(tx *Tx) error {
		for _, id := range ids {
			v := Volume{ID: id, PluginID: "hp", State: VolumeReady, Capabilities: []spec.Capability{mode}}
			if err := tx.Volumes().Insert(&v); err != nil {
				return err
			}
			for i := range claimed[id] {
				c := Claim{VolumeID: id, Alloc: fmt.Sprintf("r%d", i), Mode: ClaimRead, AccessMode: mode.AccessMode,
					AttachmentMode: mode.AttachmentMode, State: ClaimPublished}
				if err := tx.Claims().Insert(&c); err != nil {
					return err
				}
			}
		}
		return nil
	})
	var briefs []VolumeBrief
	view(t, s, func(tx *Tx) (err error) {
		briefs, err = volumes{tx}.Briefs()
		return err
	})
	if len(briefs) != len(ids) {
		t.Fatalf("%d briefs, want %d", len(briefs), len(ids))
	}
	for i, b := range briefs {
		if i > 0 && briefs[i-1].ID >= b.ID {
			t.Errorf("briefs out of bytewise order: %q before %q", briefs[i-1].ID, b.ID)
		}
		if b.ReadClaims != claimed[b.ID] {
			t.Errorf("volume %q: %d read claims, want %d", b.ID, b.ReadClaims, claimed[b.ID])
		}
	}
}

// A read connection's page cache is small (readCacheKiB): a list scans the whole database once,
// and a large cache only costs a fresh process its allocation. The write connection keeps
// SQLite's default, which a bulk write transaction fills before it spills.
func TestReadConnectionsHaveASmallPageCache(t *testing.T) {
	t.Parallel()
	s := newStore(t)
	var read, write int
	view(t, s, func(tx *Tx) error { return tx.queryRow("PRAGMA cache_size").Scan(&read) })
	update(t, s, func(tx *Tx) error { return tx.queryRow("PRAGMA cache_size").Scan(&write) })
	if read != -readCacheKiB {
		t.Errorf("a read connection's cache_size = %d, want %d (KiB)", read, -readCacheKiB)
	}
	if write != -2000 {
		t.Errorf("the write connection's cache_size = %d, want SQLite's default -2000", write)
	}
}

// The volume table reads only what it shows (BriefShown): those fields as BriefAll reads them,
// the others left zero rather than half-read.
func TestVolumeBriefsShownReadTheTableFields(t *testing.T) {
	t.Parallel()
	s := newStore(t)
	mode := spec.Capability{AccessMode: spec.SingleNodeWriter, AttachmentMode: spec.FileSystem}
	update(t, s, func(tx *Tx) error {
		for _, id := range []string{"a", "b"} {
			v := Volume{ID: id, Namespace: "prod", Name: "name-" + id, PluginID: "hp", State: VolumeReady,
				CapacityBytes: 1 << 30, Capabilities: []spec.Capability{mode}}
			if err := tx.Volumes().Insert(&v); err != nil {
				return err
			}
		}
		c := Claim{VolumeID: "a", Alloc: "w", Mode: ClaimWrite, AccessMode: mode.AccessMode,
			AttachmentMode: mode.AttachmentMode, State: ClaimPublished, TargetPath: "/t/w"}
		return tx.Claims().Insert(&c)
	})
	var all, shown []VolumeBrief
	view(t, s, func(tx *Tx) error {
		var err error
		if all, err = (volumes{tx}).Briefs(); err != nil {
			return err
		}
		return tx.Volumes().EachBrief(BriefShown, func(b *VolumeBrief) error {
			shown = append(shown, *b)
			return nil
		})
	})
	if len(all) != 2 || all[0].Namespace != "prod" || all[0].AttachmentMode != spec.FileSystem || all[0].CapacityBytes != 1<<30 || all[0].CreatedAt.IsZero() {
		t.Fatalf("BriefAll = %+v, want every field read", all)
	}
	var want []VolumeBrief
	for _, b := range all {
		b.Namespace, b.AttachmentMode, b.CapacityBytes, b.CreatedAt, b.Topologies = "", "", 0, time.Time{}, nil
		want = append(want, b)
	}
	if !reflect.DeepEqual(shown, want) {
		t.Fatalf("BriefShown =\n%+v\nwant BriefAll's table fields\n%+v", shown, want)
	}
}

// EachBrief reads a row's text columns packed into one, NUL between them, the name last: a
// name holding NULs, what looks like the other fields, or nothing at all, and empty namespaces
// and modes, still come back field for field as the full rows have them, in both column sets.
func TestVolumeBriefsPackedFieldsRoundTrip(t *testing.T) {
	t.Parallel()
	s := newStore(t)
	names := map[string]string{"a": "\x00", "b": "", "c": "x\x00hp\x00ready\x00\x00", "d": "日本\x00", "e": " trailing\x00"}
	update(t, s, func(tx *Tx) error {
		for id, name := range names {
			v := Volume{ID: id, Name: name, PluginID: "hp-" + id, State: VolumeReady, CapacityBytes: int64(len(name))}
			if id == "c" {
				v.Namespace, v.AccessMode, v.AttachmentMode = "prod", spec.SingleNodeWriter, spec.FileSystem
				// A segment that reads as a packed row would, NUL and all (JSON escapes it).
				v.AccessibleTopology = []spec.Topology{{Segments: map[string]string{"k\x00": "x\x00hp\x00"}}}
			}
			if id == "d" {
				v.TopologyRequest = &spec.TopologyRequest{Required: []spec.Topology{{Segments: map[string]string{"zone": "\x00"}}}}
			}
			if err := tx.Volumes().Insert(&v); err != nil {
				return err
			}
		}
		return nil
	})
	var vols []Volume
	briefs := map[BriefColumns][]VolumeBrief{}
	view(t, s, func(tx *Tx) (err error) {
		if vols, err = tx.Volumes().List(VolumeFilter{}); err != nil {
			return err
		}
		for _, cols := range []BriefColumns{BriefShown, BriefAll, BriefShown | BriefTopologies, BriefAll | BriefTopologies} {
			if err := tx.Volumes().EachBrief(cols, func(b *VolumeBrief) error {
				briefs[cols] = append(briefs[cols], *b)
				return nil
			}); err != nil {
				return err
			}
		}
		return nil
	})
	for _, cols := range []BriefColumns{BriefShown, BriefAll, BriefShown | BriefTopologies, BriefAll | BriefTopologies} {
		var want []VolumeBrief
		for _, v := range vols {
			b := VolumeBrief{ID: v.ID, Name: v.Name, PluginID: v.PluginID, State: v.State, AccessMode: v.AccessMode}
			if cols&BriefTopologies != 0 {
				b.Topologies = briefWant(v)
			}
			if cols&BriefAll != 0 {
				b.Namespace, b.AttachmentMode, b.CapacityBytes, b.CreatedAt = v.Namespace, v.AttachmentMode, v.CapacityBytes, v.CreatedAt
			}
			want = append(want, b)
		}
		if len(want) != len(names) || !reflect.DeepEqual(briefs[cols], want) {
			t.Errorf("EachBrief(%d) =\n%+v\nwant (from the full rows)\n%+v", cols, briefs[cols], want)
		}
	}
}

// briefWant is where a volume is accessible from as a brief says it: its accessible topology,
// else its topology request's required list, else nowhere in particular (nil).
func briefWant(v Volume) []spec.Topology {
	switch {
	case len(v.AccessibleTopology) > 0:
		return v.AccessibleTopology
	case v.TopologyRequest != nil && len(v.TopologyRequest.Required) > 0:
		return v.TopologyRequest.Required
	}
	return nil
}
