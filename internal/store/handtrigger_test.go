package store

import (
	"context"
	"errors"
	"strings"
	"testing"
)

// A trigger added to the state database by hand (an audit, a guard typed into a sqlite3 shell)
// that refuses a write is reported as that trigger's refusal, with its message: not as volctl's
// own foreign-key refusal ("in use: live claims or a staging still refer to it", a conflict),
// which would send the user looking for claims that do not exist.
func TestTriggerAddedByHandIsNotReportedAsAForeignKey(t *testing.T) {
	t.Parallel()
	s := newStore(t)
	update(t, s, func(tx *Tx) error { return insertReady(tx, "db") })
	db := rawDB(t, s.Path())
	if _, err := db.Exec(`CREATE TRIGGER keep_volumes BEFORE DELETE ON volumes BEGIN SELECT RAISE(ABORT, 'volumes are kept'); END`); err != nil {
		t.Fatal(err)
	}
	err := s.Update(context.Background(), func(tx *Tx) error { return tx.Volumes().Delete("db") })
	if err == nil {
		t.Fatal("Delete succeeded under a trigger that refuses it")
	}
	if errors.Is(err, ErrConflict) || strings.Contains(err.Error(), "in use") || !strings.Contains(err.Error(), "volumes are kept") ||
		!strings.Contains(err.Error(), `volume "db"`) {
		t.Errorf("Delete refused by a trigger added by hand: %v, want the trigger's message, naming the volume, not a conflict", err)
	}
}
