package store

import (
	"context"
	"errors"
	"math"
	"strings"
	"testing"
)

// Handover marks: one per volume, replaced by Put, listed by volume ID, their unsettled record
// and Raft index written by Put and SetOutcome, and a marked volume cannot be deleted (RESTRICT) nor a mark
// made for a volume that does not exist.
func TestHandovers(t *testing.T) {
	t.Parallel()
	s := newStore(t)
	update(t, s, func(tx *Tx) error {
		return errors.Join(
			insertReady(tx, "b", "a"),
			tx.Handovers().Put(&Handover{VolumeID: "b", Address: "http://n1:4646"}),
			tx.Handovers().Put(&Handover{VolumeID: "a", Address: "http://n1:4646"}),
			tx.Handovers().Put(&Handover{VolumeID: "a", Address: "http://n1:4646", Namespace: "prod", Region: "eu", Forced: true}),
			tx.Handovers().SetOutcome("b", true, 0, nil),
		)
	})
	view(t, s, func(tx *Tx) error {
		hs, err := tx.Handovers().List()
		if err != nil {
			return err
		}
		if len(hs) != 2 || hs[0].VolumeID != "a" || !hs[0].Forced || hs[0].Namespace != "prod" || hs[0].Region != "eu" ||
			hs[0].HandedAt.IsZero() || hs[0].Unsettled || hs[1].VolumeID != "b" || !hs[1].Unsettled {
			t.Errorf("handovers = %+v", hs)
		}
		if _, err := tx.Handovers().Get("c"); !errors.Is(err, ErrNotFound) {
			t.Errorf("Get of an unmarked volume: %v, want ErrNotFound", err)
		}
		return nil
	})
	update(t, s, func(tx *Tx) error {
		return errors.Join(tx.Handovers().SetOutcome("b", false, 1<<63+5, nil),
			tx.Handovers().Put(&Handover{VolumeID: "a", Address: "http://n1:4646", Namespace: "prod", Region: "eu", Forced: true, Unsettled: true, Index: 7}))
	})
	view(t, s, func(tx *Tx) error {
		a, aerr := tx.Handovers().Get("a")
		b, berr := tx.Handovers().Get("b")
		if aerr != nil || berr != nil || !a.Unsettled || a.Index != 7 || b.Unsettled || b.Index != math.MaxInt64 {
			t.Errorf("after SetOutcome(b, false, 2^63+5) and Put(a, unsettled): a %+v (%v), b %+v (%v)", a, aerr, b, berr)
		}
		return nil
	})
	if err := s.Update(context.Background(), func(tx *Tx) error { return tx.Handovers().SetOutcome("c", true, 0, nil) }); !errors.Is(err, ErrNotFound) {
		t.Errorf("SetOutcome of an unmarked volume: %v, want ErrNotFound", err)
	}
	err := s.Update(context.Background(), func(tx *Tx) error { return tx.Volumes().Delete("a") })
	if !errors.Is(err, ErrConflict) {
		t.Errorf("deleting a handed-over volume: %v, want ErrConflict", err)
	}
	err = s.Update(context.Background(), func(tx *Tx) error { return tx.Handovers().Put(&Handover{VolumeID: "nope", Address: "x"}) })
	if !errors.Is(err, ErrConflict) || !strings.Contains(err.Error(), `volume "nope" does not exist`) {
		t.Errorf("marking a volume that does not exist: %v", err)
	}
	update(t, s, func(tx *Tx) error {
		return errors.Join(tx.Handovers().Delete("a"), tx.Volumes().Delete("a"))
	})
	if err := s.Update(context.Background(), func(tx *Tx) error { return tx.Handovers().Delete("a") }); !errors.Is(err, ErrNotFound) {
		t.Errorf("deleting a missing mark: %v, want ErrNotFound", err)
	}
}

// TestSchemaHasNoTriggers holds the schema to what errors.go's wrap assumes: a constraint
// error with SQLITE_CONSTRAINT_TRIGGER saying "FOREIGN KEY constraint failed" comes from the
// triggers SQLite makes for ON DELETE RESTRICT; any other is a trigger added by hand
// (TestTriggerAddedByHandIsNotReportedAsAForeignKey). A trigger of volctl's own (a RAISE) would
// be reported as one added by hand: word its error there before adding one.
func TestSchemaHasNoTriggers(t *testing.T) {
	t.Parallel()
	s := newStore(t)
	view(t, s, func(tx *Tx) error {
		var n int
		if err := tx.queryRow(`SELECT count(*) FROM sqlite_schema WHERE type = 'trigger'`).Scan(&n); err != nil {
			return err
		}
		if n != 0 {
			t.Errorf("the schema has %d triggers: wrap takes SQLITE_CONSTRAINT_TRIGGER for a foreign key", n)
		}
		return nil
	})
}
