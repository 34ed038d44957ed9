package store

import (
	"errors"
	"fmt"
	"reflect"
	"strings"
	"testing"
	"time"

	"github.com/volctl/volctl/internal/spec"
)

// fill sets every field reachable from v to a distinct non-zero value, so a round trip through
// the database proves that every field has a column (a field added later without one fails).
func fill(v reflect.Value, n *int) {
	*n++
	if v.Type() == reflect.TypeOf(time.Time{}) {
		v.Set(reflect.ValueOf(time.Unix(1_700_000_000+int64(*n), int64(*n)).UTC()))
		return
	}
	if v.Type() == reflect.TypeOf(TargetAcceptance(0)) {
		// Four values, not a number: the one that is no column's default (NULL, or 0).
		v.Set(reflect.ValueOf(TargetAccepted))
		return
	}
	switch v.Kind() {
	case reflect.String:
		v.SetString(fmt.Sprintf("%s-%d", strings.ToLower(v.Type().Name()), *n))
	case reflect.Int, reflect.Int64, reflect.Int32:
		v.SetInt(int64(*n))
	case reflect.Uint64, reflect.Uint32:
		v.SetUint(uint64(*n))
	case reflect.Bool:
		v.SetBool(true)
	case reflect.Pointer:
		v.Set(reflect.New(v.Type().Elem()))
		fill(v.Elem(), n)
	case reflect.Struct:
		for i := range v.NumField() {
			fill(v.Field(i), n)
		}
	case reflect.Slice:
		v.Set(reflect.MakeSlice(v.Type(), 2, 2))
		for i := range 2 {
			fill(v.Index(i), n)
		}
	case reflect.Map:
		m := reflect.MakeMap(v.Type())
		for range 2 {
			k, e := reflect.New(v.Type().Key()).Elem(), reflect.New(v.Type().Elem()).Elem()
			fill(k, n)
			fill(e, n)
			m.SetMapIndex(k, e)
		}
		v.Set(m)
	default:
		panic("fill: unhandled kind " + v.Kind().String())
	}
}

func filled[T any]() T {
	var v T
	n := 0
	fill(reflect.ValueOf(&v).Elem(), &n)
	return v
}

func diff(t *testing.T, what string, got, want any) {
	t.Helper()
	if !reflect.DeepEqual(got, want) {
		t.Errorf("%s round trip:\n got: %#v\nwant: %#v", what, got, want)
	}
}

// insertReady inserts ready volumes of plugin hp with these IDs, the fixture most tests start from.
func insertReady(tx *Tx, ids ...string) error {
	for _, id := range ids {
		if err := tx.Volumes().Insert(&Volume{ID: id, PluginID: "hp", State: VolumeReady}); err != nil {
			return err
		}
	}
	return nil
}

// Every field of every entity survives a write and a read, secrets and mount flags raw.
func TestRoundTripEveryField(t *testing.T) {
	t.Parallel()
	clock := time.Unix(1_800_000_000, 42).UTC()
	s := newStore(t, WithClock(func() time.Time { return clock }))

	vol := filled[Volume]()
	vol.State = VolumeReady
	claim := filled[Claim]()
	claim.VolumeID, claim.Mode, claim.State = vol.ID, ClaimWrite, ClaimNodeStaged
	plugin := filled[Plugin]()
	plugin.Type = spec.PluginMonolith
	staging := filled[Staging]()
	staging.VolumeID = vol.ID
	snap := filled[Snapshot]()
	group := filled[Group]()
	group.State = GroupRunning
	ev := filled[Event]()

	update(t, s, func(tx *Tx) error {
		if err := tx.Volumes().Insert(&vol); err != nil {
			return err
		}
		// The pending expansion, and the one kept beneath it, are written by
		// SetExpansionIntentOver alone, as the fingerprint is.
		if err := tx.Volumes().SetExpansionIntentOver(vol.ID, vol.ExpandMin, vol.ExpandMax, vol.ExpandBeneathMin, vol.ExpandBeneathMax); err != nil {
			return err
		}
		if err := tx.Claims().Insert(&claim); err != nil {
			return err
		}
		// The binds' mounts are written by SetBindMounts alone.
		if err := tx.Claims().SetBindMounts(claim.ID, claim.BindMounts); err != nil {
			return err
		}
		// So is what the target showed once published.
		if err := tx.Claims().SetTargetMount(claim.ID, claim.TargetMount); err != nil {
			return err
		}
		// Insert gave the volume the claim's modes; keep the expectation in step.
		vol.AccessMode, vol.AttachmentMode = claim.AccessMode, claim.AttachmentMode
		if err := tx.Plugins().Put(&plugin); err != nil {
			return err
		}
		if err := tx.Plugins().SetFingerprint(plugin.ID, plugin.Fingerprint); err != nil {
			return err
		}
		if err := tx.Plugins().SetHealth(plugin.ID, plugin.Health); err != nil {
			return err
		}
		if err := tx.Plugins().SetCapabilityChange(plugin.ID, *plugin.CapabilityChange); err != nil {
			return err
		}
		if err := tx.Plugins().SetSupervision(plugin.ID, *plugin.Supervision); err != nil {
			return err
		}
		if err := tx.Stagings().Put(&staging); err != nil {
			return err
		}
		if err := tx.Snapshots().Put(&snap); err != nil {
			return err
		}
		if err := tx.Groups().Put(&group); err != nil {
			return err
		}
		return tx.Events().Append(&ev)
	})

	view(t, s, func(tx *Tx) error {
		for _, r := range []struct {
			what string
			read func() (any, error)
			want any
		}{
			{"volume", func() (any, error) { return tx.Volumes().Get(vol.ID) }, vol},
			{"claim", func() (any, error) { return tx.Claims().Get(claim.ID) }, claim},
			{"plugin", func() (any, error) { return tx.Plugins().Get(plugin.ID) }, plugin},
			{"staging", func() (any, error) { return tx.Stagings().Get(vol.ID) }, staging},
			{"snapshot", func() (any, error) { return tx.Snapshots().Get(snap.PluginID, snap.SnapshotID) }, snap},
			{"group", func() (any, error) { return tx.Groups().Get(group.Name) }, group},
			{"events", func() (any, error) { return tx.Events().Recent(1, EventFilter{}) }, []Event{ev}},
		} {
			got, err := r.read()
			if err != nil {
				return err
			}
			diff(t, r.what, got, r.want)
		}
		return nil
	})

	var freedAt time.Time
	update(t, s, func(tx *Tx) error {
		freedAt = tx.now()
		return tx.Claims().Free(claim.ID, OutcomeReleased)
	})
	view(t, s, func(tx *Tx) error {
		past, err := tx.History(vol.ID, 0)
		if err != nil {
			return err
		}
		if len(past) != 1 {
			t.Fatalf("history = %d entries, want 1", len(past))
		}
		if past[0].HistoryID == 0 || past[0].FreedAt.Before(freedAt) || past[0].Outcome != OutcomeReleased {
			t.Errorf("history entry = id %d, freed %v, outcome %q; want an id, freed at or after %v, released",
				past[0].HistoryID, past[0].FreedAt, past[0].Outcome, freedAt)
		}
		claim.BindMounts, claim.TargetMount = nil, nil // not kept in the history
		diff(t, "freed claim", past[0].Claim, claim)
		return nil
	})
}

// Secrets and mount flags are stored raw (the engine sends them) but never printed.
func TestSecretsStoredRawPrintedRedacted(t *testing.T) {
	t.Parallel()
	s := newStore(t)
	const secret, flag, env = "hunter2-secret", "password=flag-secret", "env-secret"
	vol := Volume{ID: "v", PluginID: "p", State: VolumeReady, Secrets: spec.Secrets{"key": secret},
		MountOptions: &spec.MountOptions{FSType: "ext4", MountFlags: spec.MountFlags{flag}}}
	claim := Claim{VolumeID: "v", Alloc: "a", Mode: ClaimRead, State: ClaimTaken, MountFlags: spec.MountFlags{flag}}
	plugin := Plugin{ID: "p", Type: spec.PluginNode, Exec: &spec.Exec{Command: "x", Env: spec.Secrets{"TOKEN": env}}}
	group := Group{Name: "g", State: GroupRunning, Spec: spec.Group{Name: "g", Volumes: []spec.VolumeRequest{{
		Name: "data", MountOptions: &spec.MountOptions{MountFlags: spec.MountFlags{flag}}}}}}
	update(t, s, func(tx *Tx) error {
		return errors.Join(tx.Volumes().Insert(&vol), tx.Claims().Insert(&claim), tx.Plugins().Put(&plugin),
			tx.Groups().Put(&group))
	})

	var got struct {
		v Volume
		c Claim
		p Plugin
		g Group
	}
	view(t, s, func(tx *Tx) (err error) {
		if got.v, err = tx.Volumes().Get("v"); err != nil {
			return err
		}
		if got.c, err = tx.Claims().Find("v", "a"); err != nil {
			return err
		}
		if got.p, err = tx.Plugins().Get("p"); err != nil {
			return err
		}
		got.g, err = tx.Groups().Get("g")
		return err
	})
	if got.v.Secrets["key"] != secret || got.v.MountOptions.MountFlags[0] != flag || got.c.MountFlags[0] != flag ||
		got.p.Exec.Env["TOKEN"] != env || got.g.Spec.Volumes[0].MountOptions.MountFlags[0] != flag {
		t.Fatalf("raw values did not round-trip: %#v", got)
	}

	past := PastClaim{Claim: got.c}
	for _, v := range []any{got.v, got.c, got.p, got.g, &got.v, &got.c, past, []Volume{got.v}} {
		for _, verb := range []string{"%v", "%+v", "%#v", "%s", "%q", "%x", "%d", "%10.3s"} {
			out := fmt.Sprintf(verb, v)
			for _, s := range []string{secret, flag, env} {
				if strings.Contains(out, s) {
					t.Errorf("fmt %s of %T leaks %q: %s", verb, v, s, out)
				}
			}
		}
	}

	// Printing redacted must not print less: the freed-claim fields, the Go names under %#v.
	past.Outcome = OutcomeForced
	if out := fmt.Sprintf("%+v", past); !strings.Contains(out, "Outcome:forced") || !strings.Contains(out, "Alloc:a") {
		t.Errorf("%%+v of a PastClaim = %s, want its claim and its outcome", out)
	}
	if out := fmt.Sprintf("%#v", got.v); !strings.HasPrefix(out, `store.Volume{ID:"v"`) {
		t.Errorf("%%#v of a Volume = %s, want it to start with store.Volume{", out)
	}

	// Raw in the file, as the brief says: the redaction is for output, not storage.
	db := rawDB(t, s.Path())
	var secCol, flagsCol string
	if err := db.QueryRow(`SELECT secrets FROM volumes WHERE id = 'v'`).Scan(&secCol); err != nil {
		t.Fatal(err)
	}
	if err := db.QueryRow(`SELECT mount_flags FROM claims`).Scan(&flagsCol); err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(secCol, secret) || !strings.Contains(flagsCol, flag) {
		t.Errorf("stored columns = %q, %q; want the raw values", secCol, flagsCol)
	}
}

// A nil map or slice and an empty one are different things to CSI (an absent volume context is
// not an empty one); both survive a round trip as they were.
func TestNilAndEmptyPreserved(t *testing.T) {
	t.Parallel()
	clock := time.Unix(1_800_000_000, 42).UTC()
	s := newStore(t, WithClock(func() time.Time { return clock }))
	vols := []Volume{
		{ID: "nil", PluginID: "p", State: VolumeReady},
		{ID: "empty", PluginID: "p", State: VolumeReady, Capabilities: []spec.Capability{}, Secrets: spec.Secrets{},
			Parameters: map[string]string{}, Context: map[string]string{}, AccessibleTopology: []spec.Topology{},
			MountOptions: &spec.MountOptions{MountFlags: spec.MountFlags{}}, TopologyRequest: &spec.TopologyRequest{}},
	}
	claims := []Claim{
		{VolumeID: "nil", Alloc: "a", Mode: ClaimRead, State: ClaimTaken},
		{VolumeID: "empty", Alloc: "a", Mode: ClaimRead, State: ClaimTaken, MountFlags: spec.MountFlags{},
			PublishContext: map[string]string{}, Binds: []spec.VolumeMount{}},
	}
	update(t, s, func(tx *Tx) error {
		for i := range vols {
			if err := tx.Volumes().Insert(&vols[i]); err != nil {
				return err
			}
			if err := tx.Claims().Insert(&claims[i]); err != nil {
				return err
			}
			vols[i].AccessMode, vols[i].AttachmentMode = claims[i].AccessMode, claims[i].AttachmentMode
		}
		return nil
	})
	view(t, s, func(tx *Tx) error {
		for i, want := range vols {
			got, err := tx.Volumes().Get(want.ID)
			if err != nil {
				return err
			}
			diff(t, "volume "+want.ID, got, want)
			gotClaim, err := tx.Claims().Get(claims[i].ID)
			if err != nil {
				return err
			}
			diff(t, "claim on "+want.ID, gotClaim, claims[i])
		}
		return nil
	})
}

func TestNotFound(t *testing.T) {
	t.Parallel()
	s := newStore(t)
	tests := []struct {
		name string
		op   func(tx *Tx) error
		want string
	}{
		{"get volume", func(tx *Tx) error { _, err := tx.Volumes().Get("db"); return err }, `volume "db": not found`},
		{"update volume", func(tx *Tx) error { return tx.Volumes().Update(&Volume{ID: "db", State: VolumeReady}) }, `volume "db": not found`},
		{"delete volume", func(tx *Tx) error { return tx.Volumes().Delete("db") }, `volume "db": not found`},
		{"get plugin", func(tx *Tx) error { _, err := tx.Plugins().Get("hp"); return err }, `plugin "hp": not found`},
		{"delete plugin", func(tx *Tx) error { return tx.Plugins().Delete("hp") }, `plugin "hp": not found`},
		{"fingerprint plugin", func(tx *Tx) error { return tx.Plugins().SetFingerprint("hp", Fingerprint{}) }, `plugin "hp": not found`},
		{"probe plugin", func(tx *Tx) error { return tx.Plugins().SetHealth("hp", Health{}) }, `plugin "hp": not found`},
		{"get claim", func(tx *Tx) error { _, err := tx.Claims().Get(7); return err }, `claim 7: not found`},
		{"find claim", func(tx *Tx) error { _, err := tx.Claims().Find("db", "web-0"); return err }, `claim on volume "db" for alloc "web-0": not found`},
		{"update claim", func(tx *Tx) error {
			return tx.Claims().Update(&Claim{ID: 7, VolumeID: "db", Alloc: "web-0", Mode: ClaimRead, State: ClaimTaken})
		}, `claim on volume "db" for alloc "web-0": not found`},
		{"free claim", func(tx *Tx) error { return tx.Claims().Free(7, OutcomeReleased) }, `free claim 7: not found`},
		{"get staging", func(tx *Tx) error { _, err := tx.Stagings().Get("db"); return err }, `staging of volume "db": not found`},
		{"delete staging", func(tx *Tx) error { return tx.Stagings().Delete("db") }, `staging of volume "db": not found`},
		{"get snapshot", func(tx *Tx) error { _, err := tx.Snapshots().Get("hp", "s1"); return err }, `snapshot "s1" of plugin "hp": not found`},
		{"delete snapshot", func(tx *Tx) error { return tx.Snapshots().Delete("hp", "s1") }, `snapshot "s1" of plugin "hp": not found`},
		{"get group", func(tx *Tx) error { _, err := tx.Groups().Get("web"); return err }, `group "web": not found`},
		{"delete group", func(tx *Tx) error { return groups{tx}.Delete("web") }, `group "web": not found`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			err := s.Update(t.Context(), tt.op)
			if !errors.Is(err, ErrNotFound) || errors.Is(err, ErrConflict) {
				t.Fatalf("err = %v, want ErrNotFound", err)
			}
			if err.Error() != tt.want {
				t.Errorf("err = %q, want %q", err, tt.want)
			}
		})
	}
}

func TestConflict(t *testing.T) {
	t.Parallel()
	s := newStore(t)
	update(t, s, func(tx *Tx) error {
		return errors.Join(
			insertReady(tx, "db", "staged"),
			tx.Claims().Insert(&Claim{VolumeID: "db", Alloc: "web-0", Mode: ClaimWrite, State: ClaimPublished}),
			tx.Stagings().Put(&Staging{VolumeID: "staged", PluginID: "hp", StagingPath: "/x"}),
		)
	})
	tests := []struct {
		name string
		op   func(tx *Tx) error
		want string
	}{
		{"duplicate volume", func(tx *Tx) error {
			return tx.Volumes().Insert(&Volume{ID: "db", PluginID: "hp", State: VolumeReady})
		}, `volume "db": already exists`},
		{"duplicate claim", func(tx *Tx) error {
			return tx.Claims().Insert(&Claim{VolumeID: "db", Alloc: "web-0", Mode: ClaimRead, State: ClaimTaken})
		}, `claim on volume "db" for alloc "web-0": already exists`},
		{"claim on missing volume", func(tx *Tx) error {
			return tx.Claims().Insert(&Claim{VolumeID: "nope", Alloc: "web-0", Mode: ClaimRead, State: ClaimTaken})
		}, `claim on volume "nope" for alloc "web-0": volume "nope" does not exist`},
		{"staging of missing volume", func(tx *Tx) error {
			return tx.Stagings().Put(&Staging{VolumeID: "nope", PluginID: "hp", StagingPath: "/x"})
		}, `staging of volume "nope": volume "nope" does not exist`},
		{"delete claimed volume", func(tx *Tx) error { return tx.Volumes().Delete("db") },
			`volume "db": in use: live claims or a staging still refer to it`},
		{"delete staged volume", func(tx *Tx) error { return tx.Volumes().Delete("staged") },
			`volume "staged": in use: live claims or a staging still refer to it`},
		{"bad volume state", func(tx *Tx) error {
			return tx.Volumes().Insert(&Volume{ID: "x", PluginID: "hp", State: "weird"})
		}, `volume "x": invalid: CHECK constraint failed: state IN ('creating', 'ready', 'deleting')`},
		{"bad claim state", func(tx *Tx) error {
			c, err := tx.Claims().Find("db", "web-0")
			if err != nil {
				return err
			}
			c.State = "floating"
			return tx.Claims().Update(&c)
		}, `claim on volume "db" for alloc "web-0": invalid: CHECK constraint failed`},
		{"bad outcome", func(tx *Tx) error {
			c, err := tx.Claims().Find("db", "web-0")
			if err != nil {
				return err
			}
			return tx.Claims().Free(c.ID, "vanished")
		}, `free claim 1: invalid: CHECK constraint failed: outcome IN ('released', 'rolled-back', 'forced')`},
		{"bad plugin type", func(tx *Tx) error { return tx.Plugins().Put(&Plugin{ID: "p", Type: "sidecar"}) },
			`plugin "p": invalid: CHECK constraint failed: type IN ('monolith', 'controller', 'node')`},
		{"bad group state", func(tx *Tx) error { return tx.Groups().Put(&Group{Name: "g", State: "paused"}) },
			`group "g": invalid: CHECK constraint failed: state IN ('running', 'stopped')`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			err := s.Update(t.Context(), tt.op)
			if !errors.Is(err, ErrConflict) || errors.Is(err, ErrNotFound) {
				t.Fatalf("err = %v, want ErrConflict", err)
			}
			if !strings.HasPrefix(err.Error(), tt.want) {
				t.Errorf("err = %q, want it to start with %q", err, tt.want)
			}
		})
	}
	// Nothing above changed anything: each failed transaction rolled back.
	view(t, s, func(tx *Tx) error {
		vols, err := tx.Volumes().List(VolumeFilter{})
		if err != nil {
			return err
		}
		cs, err := tx.Claims().ListAll()
		if err != nil {
			return err
		}
		if len(vols) != 2 || len(cs) != 1 || cs[0].State != ClaimPublished {
			t.Errorf("after refused writes: %d volumes, claims %+v; want 2 volumes and the one published claim", len(vols), cs)
		}
		return nil
	})
}

func TestClaimLifecycle(t *testing.T) {
	t.Parallel()
	s := newStore(t)
	update(t, s, func(tx *Tx) error {
		return errors.Join(
			insertReady(tx, "db", "logs"),
		)
	})
	first := Claim{VolumeID: "db", Alloc: "web-0", Mode: ClaimRead, State: ClaimTaken,
		AccessMode: spec.MultiNodeReaderOnly, AttachmentMode: spec.FileSystem}
	second := Claim{VolumeID: "db", Alloc: "web-1", Mode: ClaimRead, State: ClaimPublished,
		AccessMode: spec.MultiNodeSingleWriter, AttachmentMode: spec.BlockDevice}
	other := Claim{VolumeID: "logs", Alloc: "web-0", Mode: ClaimWrite, State: ClaimPublished,
		AccessMode: spec.SingleNodeWriter, AttachmentMode: spec.FileSystem}
	update(t, s, func(tx *Tx) error {
		return errors.Join(tx.Claims().Insert(&first), tx.Claims().Insert(&second), tx.Claims().Insert(&other))
	})

	modes := func(id string) (spec.AccessMode, spec.AttachmentMode) {
		var v Volume
		view(t, s, func(tx *Tx) (err error) { v, err = tx.Volumes().Get(id); return err })
		return v.AccessMode, v.AttachmentMode
	}
	if a, m := modes("db"); a != first.AccessMode || m != first.AttachmentMode {
		t.Errorf("volume modes = %q/%q, want the first claim's %q/%q", a, m, first.AccessMode, first.AttachmentMode)
	}

	view(t, s, func(tx *Tx) error {
		byVol, err := tx.Claims().ByVolume("db")
		if err != nil {
			return err
		}
		byAlloc, err := claims{tx}.ByAlloc("web-0")
		if err != nil {
			return err
		}
		unsettled, err := claims{tx}.ListUnsettled()
		if err != nil {
			return err
		}
		published, err := tx.Claims().CountByVolume("db", ClaimPublished, ClaimNodeStaged)
		if err != nil {
			return err
		}
		all, err := tx.Claims().CountByVolume("db")
		if err != nil {
			return err
		}
		claimed, err := tx.Claims().Claimed()
		if err != nil {
			return err
		}
		if !claimed["db"] || claimed["nosuch"] {
			t.Errorf("Claimed = %v; want db among them, and no volume without a claim", claimed)
		}
		ids := func(cs []Claim) (out []int64) {
			for _, c := range cs {
				out = append(out, c.ID)
			}
			return out
		}
		diff(t, "ByVolume ids", ids(byVol), []int64{first.ID, second.ID})
		diff(t, "ByAlloc ids", ids(byAlloc), []int64{first.ID, other.ID})
		diff(t, "ListUnsettled ids", ids(unsettled), []int64{first.ID})
		if published != 1 || all != 2 {
			t.Errorf("CountByVolume = %d published-or-staged, %d all; want 1, 2", published, all)
		}
		return nil
	})

	// Releasing and needing reconcile both unsettle a published claim.
	for _, mutate := range []func(c *Claim){
		func(c *Claim) { c.Releasing = true },
		func(c *Claim) { c.NeedsReconcile = true },
	} {
		c := other
		mutate(&c)
		if c.AtRest() {
			t.Errorf("claim %+v is at rest, want not", c)
		}
		update(t, s, func(tx *Tx) error { return tx.Claims().Update(&c) })
		view(t, s, func(tx *Tx) error {
			u, err := claims{tx}.ListUnsettled()
			if err != nil {
				return err
			}
			if len(u) != 2 {
				t.Errorf("unsettled after %+v = %d claims, want 2", c, len(u))
			}
			return nil
		})
		update(t, s, func(tx *Tx) error { return tx.Claims().Update(&other) })
	}
	if !other.AtRest() {
		t.Errorf("published claim not releasing is not at rest")
	}

	// Freeing the first claim keeps the modes (one claim is left); freeing the last clears them.
	update(t, s, func(tx *Tx) error { return tx.Claims().Free(first.ID, OutcomeRolledBack) })
	if a, _ := modes("db"); a != first.AccessMode {
		t.Errorf("after freeing one of two claims, access mode = %q, want %q kept", a, first.AccessMode)
	}
	update(t, s, func(tx *Tx) error { return tx.Claims().Free(second.ID, OutcomeReleased) })
	if a, m := modes("db"); a != "" || m != "" {
		t.Errorf("after freeing the last claim, modes = %q/%q, want cleared", a, m)
	}
	// The volume can go now, and its history stays.
	update(t, s, func(tx *Tx) error { return tx.Volumes().Delete("db") })
	view(t, s, func(tx *Tx) error {
		past, err := tx.History("db", 0)
		if err != nil {
			return err
		}
		if len(past) != 2 || past[0].ID != second.ID || past[1].ID != first.ID ||
			past[1].Outcome != OutcomeRolledBack {
			t.Errorf("history of db = %+v, want the second then the first (rolled back)", past)
		}
		one, err := tx.History("", 1)
		if err != nil {
			return err
		}
		if len(one) != 1 || one[0].ID != second.ID {
			t.Errorf("Recent(1) = %+v, want the last freed claim", one)
		}
		return nil
	})

	// Claim IDs are never reused, even after the newest claim is freed.
	update(t, s, func(tx *Tx) error { return tx.Claims().Free(other.ID, OutcomeForced) })
	again := Claim{VolumeID: "logs", Alloc: "web-0", Mode: ClaimWrite, State: ClaimTaken}
	update(t, s, func(tx *Tx) error { return tx.Claims().Insert(&again) })
	if again.ID <= other.ID {
		t.Errorf("new claim id %d, want above the freed %d", again.ID, other.ID)
	}
}

func TestClaimStateHelpers(t *testing.T) {
	t.Parallel()
	for _, st := range ClaimStates {
		want := st == ClaimTaken || st == ClaimControllerPublished || st == ClaimNodeStaged || st == ClaimPublished
		if st.IsPublishPath() != want {
			t.Errorf("%s.IsPublishPath() = %v, want %v", st, !want, want)
		}
		if !st.Valid() {
			t.Errorf("%s.Valid() = false", st)
		}
		c := Claim{State: st}
		if c.AtRest() != (st == ClaimPublished) {
			t.Errorf("claim in %s: AtRest() = %v", st, c.AtRest())
		}
	}
	if ClaimState("floating").Valid() || ClaimState("floating").IsPublishPath() {
		t.Error("an unknown state is valid or on the publish path")
	}
}

func TestVolumeQueries(t *testing.T) {
	t.Parallel()
	s := newStore(t)
	vols := []Volume{
		{ID: "db", Namespace: "default", PluginID: "hp", State: VolumeReady},
		{ID: "db_1", Namespace: "prod", PluginID: "hp", State: VolumeReady},
		{ID: "db%2", Namespace: "prod", PluginID: "nfs", State: VolumeCreating},
		{ID: "dbx", Namespace: "default", PluginID: "nfs", State: VolumeReady},
		{ID: "logs", Namespace: "default", PluginID: "hp", State: VolumeDeleting},
	}
	update(t, s, func(tx *Tx) error {
		for i := range vols {
			if err := tx.Volumes().Insert(&vols[i]); err != nil {
				return err
			}
		}
		return nil
	})
	idsOf := func(vs []Volume) []string {
		out := []string{}
		for _, v := range vs {
			out = append(out, v.ID)
		}
		return out
	}
	tests := []struct {
		name string
		op   func(vs VolumeStore) ([]Volume, error)
		want []string
	}{
		{"all", func(vs VolumeStore) ([]Volume, error) { return vs.List(VolumeFilter{}) }, []string{"db", "db%2", "db_1", "dbx", "logs"}},
		{"namespace", func(vs VolumeStore) ([]Volume, error) { return vs.List(VolumeFilter{Namespace: "prod"}) }, []string{"db%2", "db_1"}},
		{"plugin and state", func(vs VolumeStore) ([]Volume, error) {
			return vs.List(VolumeFilter{PluginID: "hp", State: VolumeReady})
		}, []string{"db", "db_1"}},
		{"no match", func(vs VolumeStore) ([]Volume, error) { return vs.List(VolumeFilter{PluginID: "none"}) }, []string{}},
		{"prefix", func(vs VolumeStore) ([]Volume, error) { return vs.ByPrefix("db") }, []string{"db", "db%2", "db_1", "dbx"}},
		{"prefix with underscore is literal", func(vs VolumeStore) ([]Volume, error) { return vs.ByPrefix("db_") }, []string{"db_1"}},
		{"prefix with percent is literal", func(vs VolumeStore) ([]Volume, error) { return vs.ByPrefix("db%") }, []string{"db%2"}},
		{"exact id as prefix", func(vs VolumeStore) ([]Volume, error) { return vs.ByPrefix("logs") }, []string{"logs"}},
		{"empty prefix", func(vs VolumeStore) ([]Volume, error) { return vs.ByPrefix("") }, []string{"db", "db%2", "db_1", "dbx", "logs"}},
		{"no prefix match", func(vs VolumeStore) ([]Volume, error) { return vs.ByPrefix("z") }, []string{}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			view(t, s, func(tx *Tx) error {
				got, err := tt.op(tx.Volumes())
				if err != nil {
					return err
				}
				diff(t, tt.name, idsOf(got), tt.want)
				return nil
			})
		})
	}
	view(t, s, func(tx *Tx) error {
		for plugin, want := range map[string]int{"hp": 3, "nfs": 2, "gone": 0} {
			n, err := tx.Volumes().CountByPlugin(plugin)
			if err != nil {
				return err
			}
			if n != want {
				t.Errorf("CountByPlugin(%q) = %d, want %d", plugin, n, want)
			}
		}
		return nil
	})
}

func TestVolumeUpdateKeepsCreation(t *testing.T) {
	t.Parallel()
	clock := time.Unix(1_800_000_000, 0).UTC()
	s := newStore(t, WithClock(func() time.Time { return clock }))
	v := Volume{ID: "db", PluginID: "hp", State: VolumeCreating}
	update(t, s, func(tx *Tx) error { return tx.Volumes().Insert(&v) })
	created := v.CreatedAt
	clock = clock.Add(time.Hour)
	v.State, v.ExternalID, v.CapacityBytes = VolumeReady, "ext-1", 1<<20
	update(t, s, func(tx *Tx) error { return tx.Volumes().Update(&v) })
	var got Volume
	view(t, s, func(tx *Tx) (err error) { got, err = tx.Volumes().Get("db"); return err })
	if !got.CreatedAt.Equal(created) || !got.UpdatedAt.Equal(clock) {
		t.Errorf("times = created %v updated %v, want %v and %v", got.CreatedAt, got.UpdatedAt, created, clock)
	}
	diff(t, "updated volume", got, v)
}

// A volume read before its first claim was inserted (by another process: admission can run
// without the volume's lock) and updated after: the update keeps the modes the claim gave the
// volume, and hands them back in v. They are the claims' (Modes), never a stale copy's.
func TestVolumeUpdateKeepsTheClaimsModes(t *testing.T) {
	t.Parallel()
	s := newStore(t)
	update(t, s, func(tx *Tx) error { return insertReady(tx, "db") })
	var stale Volume
	view(t, s, func(tx *Tx) (err error) { stale, err = tx.Volumes().Get("db"); return err })
	cl := Claim{VolumeID: "db", Alloc: "web-0", Mode: ClaimWrite, State: ClaimTaken,
		AccessMode: spec.SingleNodeWriter, AttachmentMode: spec.FileSystem}
	update(t, s, func(tx *Tx) error { return tx.Claims().Insert(&cl) })
	stale.CapacityBytes = 2 << 20
	update(t, s, func(tx *Tx) error { return tx.Volumes().Update(&stale) })
	var got Volume
	view(t, s, func(tx *Tx) (err error) { got, err = tx.Volumes().Get("db"); return err })
	if got.AccessMode != cl.AccessMode || got.AttachmentMode != cl.AttachmentMode || got.CapacityBytes != 2<<20 {
		t.Errorf("volume after the update = %q/%q, %d bytes; want the claim's %q/%q and the update's size",
			got.AccessMode, got.AttachmentMode, got.CapacityBytes, cl.AccessMode, cl.AttachmentMode)
	}
	if stale.AccessMode != cl.AccessMode || stale.AttachmentMode != cl.AttachmentMode {
		t.Errorf("Update handed back modes %q/%q, want the stored %q/%q", stale.AccessMode, stale.AttachmentMode, cl.AccessMode, cl.AttachmentMode)
	}
}

func TestPluginPutKeepsFingerprintAndHealth(t *testing.T) {
	t.Parallel()
	clock := time.Unix(1_800_000_000, 0).UTC()
	s := newStore(t, WithClock(func() time.Time { return clock }))
	p := Plugin{ID: "hp", Type: spec.PluginMonolith, Socket: "/run/a.sock"}
	update(t, s, func(tx *Tx) error {
		if err := tx.Plugins().Put(&p); err != nil {
			return err
		}
		if err := tx.Plugins().SetFingerprint("hp", Fingerprint{Provider: "volctl.hostpath", NodeID: "n1"}); err != nil {
			return err
		}
		return tx.Plugins().SetHealth("hp", Health{Healthy: true, Ready: true, ProbeLatency: time.Millisecond})
	})
	clock = clock.Add(time.Minute)
	re := Plugin{ID: "hp", Type: spec.PluginMonolith, Socket: "/run/b.sock", Timeout: time.Minute}
	update(t, s, func(tx *Tx) error { return tx.Plugins().Put(&re) })
	var got []Plugin
	view(t, s, func(tx *Tx) (err error) { got, err = tx.Plugins().List(); return err })
	if len(got) != 1 {
		t.Fatalf("plugins = %+v, want one", got)
	}
	g := got[0]
	if g.Socket != "/run/b.sock" || g.Timeout != time.Minute || g.Fingerprint.NodeID != "n1" || !g.Health.Ready {
		t.Errorf("after re-register: %+v; want the new declaration with the old fingerprint and health", g)
	}
	if !g.CreatedAt.Equal(p.CreatedAt) || !g.UpdatedAt.Equal(clock) || !re.CreatedAt.Equal(p.CreatedAt) {
		t.Errorf("times = created %v (returned %v) updated %v; want created %v, updated %v",
			g.CreatedAt, re.CreatedAt, g.UpdatedAt, p.CreatedAt, clock)
	}
	if !g.Fingerprint.At.Equal(p.CreatedAt) || !g.Health.ProbedAt.Equal(p.CreatedAt) {
		t.Errorf("zero fingerprint/probe times were not stamped with the clock: %v, %v", g.Fingerprint.At, g.Health.ProbedAt)
	}
	if spec := g.Spec(); spec.Socket != "/run/b.sock" || PluginFromSpec(spec).Socket != "/run/b.sock" {
		t.Errorf("Spec() = %+v", spec)
	}
	update(t, s, func(tx *Tx) error { return tx.Plugins().Delete("hp") })
}

func TestStagingsSnapshotsGroups(t *testing.T) {
	t.Parallel()
	s := newStore(t)
	update(t, s, func(tx *Tx) error {
		return errors.Join(
			insertReady(tx, "a", "b"),
			tx.Stagings().Put(&Staging{VolumeID: "b", PluginID: "hp", StagingPath: "/s/b"}),
			tx.Stagings().Put(&Staging{VolumeID: "a", PluginID: "hp", StagingPath: "/s/a"}),
			// Put replaces.
			tx.Stagings().Put(&Staging{VolumeID: "a", PluginID: "hp", StagingPath: "/s/a", Staged: true}),
			tx.Snapshots().Put(&Snapshot{PluginID: "hp", SnapshotID: "s2"}),
			tx.Snapshots().Put(&Snapshot{PluginID: "nfs", SnapshotID: "s1"}),
			tx.Snapshots().Put(&Snapshot{PluginID: "hp", SnapshotID: "s1", ReadyToUse: true}),
			tx.Groups().Put(&Group{Name: "web", State: GroupRunning, Count: 2}),
			tx.Groups().Put(&Group{Name: "db", State: GroupRunning, Count: 1}),
		)
	})
	view(t, s, func(tx *Tx) error {
		sts, err := tx.Stagings().List()
		if err != nil {
			return err
		}
		if len(sts) != 2 || sts[0].VolumeID != "a" || !sts[0].Staged || sts[1].Staged {
			t.Errorf("stagings = %+v, want a (staged) then b", sts)
		}
		all, err := tx.Snapshots().List("")
		if err != nil {
			return err
		}
		hp, err := tx.Snapshots().List("hp")
		if err != nil {
			return err
		}
		if len(all) != 3 || len(hp) != 2 || hp[0].SnapshotID != "s1" || !hp[0].ReadyToUse {
			t.Errorf("snapshots = %+v, of hp %+v", all, hp)
		}
		gs, err := tx.Groups().List()
		if err != nil {
			return err
		}
		if len(gs) != 2 || gs[0].Name != "db" || gs[1].Count != 2 {
			t.Errorf("groups = %+v, want db then web", gs)
		}
		return nil
	})
	update(t, s, func(tx *Tx) error {
		return errors.Join(tx.Stagings().Delete("a"), tx.Snapshots().Delete("hp", "s1"), groups{tx}.Delete("web"))
	})
	view(t, s, func(tx *Tx) error {
		if _, err := tx.Stagings().Get("a"); !errors.Is(err, ErrNotFound) {
			t.Errorf("deleted staging: %v", err)
		}
		if _, err := tx.Snapshots().Get("hp", "s1"); !errors.Is(err, ErrNotFound) {
			t.Errorf("deleted snapshot: %v", err)
		}
		if _, err := tx.Groups().Get("web"); !errors.Is(err, ErrNotFound) {
			t.Errorf("deleted group: %v", err)
		}
		return nil
	})
}

func TestEventLogBound(t *testing.T) {
	t.Parallel()
	const limit = 50
	s := newStore(t, WithEventLimit(limit))
	// Appends in separate transactions and in one, past the bound several times over.
	for i := range 3 * limit {
		update(t, s, func(tx *Tx) error {
			return tx.Events().Append(&Event{Kind: "claim", VolumeID: fmt.Sprintf("v%d", i%3), Message: fmt.Sprint(i)})
		})
	}
	update(t, s, func(tx *Tx) error {
		for i := 3 * limit; i < 4*limit+7; i++ {
			if err := tx.Events().Append(&Event{Kind: "release", VolumeID: fmt.Sprintf("v%d", i%3), Message: fmt.Sprint(i)}); err != nil {
				return err
			}
		}
		return nil
	})
	if n := rawCount(t, rawDB(t, s.Path()), "events"); n != limit {
		t.Fatalf("events kept = %d, want exactly the limit %d", n, limit)
	}
	view(t, s, func(tx *Tx) error {
		all, err := tx.Events().Recent(0, EventFilter{})
		if err != nil {
			return err
		}
		if len(all) != limit || all[0].Message != fmt.Sprint(4*limit+6) || all[limit-1].Message != fmt.Sprint(3*limit+7) {
			t.Errorf("kept events run from %q to %q (%d), want the newest %d", all[len(all)-1].Message, all[0].Message, len(all), limit)
		}
		v1, err := tx.Events().Recent(5, EventFilter{VolumeID: "v1", Kind: "release"})
		if err != nil {
			return err
		}
		if len(v1) != 5 {
			t.Fatalf("filtered = %d events, want 5", len(v1))
		}
		for _, e := range v1 {
			if e.VolumeID != "v1" || e.Kind != "release" {
				t.Errorf("filter let through %+v", e)
			}
		}
		after, err := tx.Events().Recent(0, EventFilter{AfterID: all[2].ID})
		if err != nil {
			return err
		}
		diff(t, "events after an id", after, all[:2])
		return nil
	})
}

func TestHistoryBound(t *testing.T) {
	t.Parallel()
	const limit = 5
	s := newStore(t, WithHistoryLimit(limit))
	update(t, s, func(tx *Tx) error { return tx.Volumes().Insert(&Volume{ID: "v", PluginID: "p", State: VolumeReady}) })
	for i := range 3 * limit {
		update(t, s, func(tx *Tx) error {
			c := Claim{VolumeID: "v", Alloc: fmt.Sprint(i), Mode: ClaimRead, State: ClaimControllerDetached}
			if err := tx.Claims().Insert(&c); err != nil {
				return err
			}
			return tx.Claims().Free(c.ID, OutcomeReleased)
		})
	}
	var past []PastClaim
	view(t, s, func(tx *Tx) (err error) { past, err = tx.History("", 0); return err })
	if len(past) != limit || past[0].Alloc != fmt.Sprint(3*limit-1) {
		t.Fatalf("history = %d entries, newest %q; want %d, newest %q", len(past), past[0].Alloc, limit, fmt.Sprint(3*limit-1))
	}
}

func TestVolumeSpecRoundTrip(t *testing.T) {
	t.Parallel()
	sv := filled[spec.Volume]()
	sv.Type = "csi"
	// No spec field: the plugin's size, which nomad.RegisterSpec sets from the volume's own
	// column (CapacityBytes) for Nomad's API; a parsed spec never has one.
	sv.Capacity = 0
	got := VolumeFromSpec(sv).Spec()
	diff(t, "spec.Volume through store.Volume", got, sv)
}
