package store

import "context"

// Secrets leave the files with the state. The write connection runs with secure_delete, so
// SQLite overwrites with zeros the bytes of a row it deletes or rewrites and every page it
// frees: the database file, once checkpointed, holds no copy of a value taken out of the state.
// The WAL still does: every frame written before the commit that took the value out holds the
// page as it was, until the WAL is reset, which happens only when a later write finds the
// whole WAL checkpointed and no reader behind. A transaction that took secret values out of
// the state (forgetGone, which a Store opened WithForget runs: the engine's) is therefore
// followed by a truncating checkpoint, which copies the WAL into the database file and
// truncates the WAL to nothing.
//
// A reader of another process holding a snapshot older than that commit (the dashboard, an
// agent's read) makes the checkpoint stop short, and a process may die between its COMMIT and
// the checkpoint: the wipe is a debt of the state, not of the process that owes it. The commit
// records it in the state mark (wal_secrets, migration 0012: that commit's seq), in the same
// transaction, by the statement that counts the commit (markUpdate); every commit of any process
// reads it back from that statement, one integer more, and the first that truncates the WAL
// clears it (payWAL), unless a later commit owes it again. Close tries once more, and Open
// reads it too (payOwedWipe), for a process that only reads.
//
// secure_delete is not retroactive: a state a volctl before it (before migration 0012) deleted
// secrets from keeps them in its free pages. The migration records a VACUUM owed (vacuum), paid
// by the process that migrated as soon as the migration committed (VACUUM cannot run inside a
// transaction), or else by the first commit that reads it: the database written again whole, then
// the WAL, which now holds all of it, owed a truncation as above.

// markOwing is markUpdate for a schema with the debts (debtVersion on): it records a wipe of
// the WAL owed by this commit when its argument is 1 (the transaction took secrets out of the
// state), and returns the commit's seq and the debts.
const markOwing = "INSERT INTO state_mark (k, magic, id, seq, wal_secrets) VALUES (1, '" + markMagic + "', randomblob(16), 1, ?1) " +
	"ON CONFLICT (k) DO UPDATE SET seq = seq + 1, wal_secrets = CASE WHEN ?1 THEN seq + 1 ELSE wal_secrets END " +
	"RETURNING seq, wal_secrets, vacuum"

// debtVersion is the schema version from which the state mark records the wipes owed.
const debtVersion = 12

// debts is what the commit of seq read of the wipes owed (markOwing).
type debts struct{ seq, walSecrets, vacuum int64 }

// pay pays, after tx committed, on tx's connection (the write connection, now outside any
// transaction), the wipes d says are owed.
func (s *Store) pay(tx *Tx, d debts) {
	// A VACUUM that failed is tried again by the next process; this commit's own wipe of the
	// WAL is still paid (review28g: a failed VACUUM returned before it, the secret its delete
	// took out left in the WAL, and Close had nothing to try again).
	if d.vacuum != 0 && !s.vacuumTried.Swap(true) && s.vacuum(tx) {
		return // the VACUUM recorded the WAL's wipe owed, this commit's included, and paid it
	}
	if d.walSecrets != 0 {
		s.payWAL(tx, d.seq)
	}
}

// payWAL truncates the WAL and then clears the debt of the commits up to seq, all committed
// before the truncation: a later commit's, made after this one's and maybe after the
// truncation, stays, for its own commit or the next to pay. secretsInWAL says, for Close,
// whether this process met a debt it could not pay.
func (s *Store) payWAL(tx *Tx, seq int64) {
	ok := truncateWAL(tx, s)
	s.secretsInWAL.Store(!ok)
	if ok {
		s.clearDebt("UPDATE state_mark SET seq = seq + 1, wal_secrets = 0 WHERE wal_secrets BETWEEN 1 AND ?", tx, seq)
	}
}

// vacuum writes the database again whole with secure_delete on (its free pages, which may hold
// what a volctl without secure_delete deleted, gone), records the VACUUM done and a wipe of the
// WAL, which holds the old pages the VACUUM read, owed, and pays that. It says whether the
// VACUUM was recorded done and the WAL's wipe tried with it.
func (s *Store) vacuum(tx *Tx) bool {
	stmt := "VACUUM"
	if s.vacuumSQL != "" {
		stmt = s.vacuumSQL
	}
	if _, err := tx.exec(stmt); err != nil {
		s.log.Warn("the one-time VACUUM that wipes secrets an older volctl deleted from the state's free pages failed; the next process tries again", "path", s.path, "err", err)
		return false
	}
	var seq int64
	if !s.clearDebt("UPDATE state_mark SET seq = seq + 1, vacuum = 0, wal_secrets = seq + 1 RETURNING seq", tx, &seq) {
		return false
	}
	s.payWAL(tx, seq)
	return true
}

// clearDebt runs update, with arg, in a transaction of its own on tx's connection, which is in
// none; an arg that is a *int64 is scanned from update's RETURNING instead. It says whether it
// committed; one that did not leaves the debt for a later commit to pay again.
func (s *Store) clearDebt(update string, tx *Tx, arg any) bool {
	t := &Tx{ctx: context.Background(), c: tx.c, s: s}
	if _, err := t.exec("BEGIN IMMEDIATE"); err != nil {
		s.log.Debug("record a wipe of secrets done", "path", s.path, "err", err)
		s.endTx(t.c)
		return false
	}
	var err error
	if p, ok := arg.(*int64); ok {
		err = t.queryRow(update).Scan(p)
	} else {
		_, err = t.exec(update, arg)
	}
	if err == nil {
		_, err = t.exec("COMMIT")
	}
	if err != nil {
		s.log.Debug("record a wipe of secrets done", "path", s.path, "err", err)
		s.rollback(t.c)
		return false
	}
	return true
}

// wipeWAL truncates the WAL after tx committed, on a schema before debtVersion, which keeps
// the debt in secretsInWAL alone.
func (s *Store) wipeWAL(tx *Tx) {
	s.secretsInWAL.Store(!truncateWAL(tx, s))
}

// truncateWAL runs a truncating checkpoint on tx's connection and says whether it completed:
// the WAL copied whole into the database file and truncated to zero bytes.
func truncateWAL(tx *Tx, s *Store) bool {
	var busy, logged, copied int
	if err := tx.queryRow("PRAGMA wal_checkpoint(TRUNCATE)").Scan(&busy, &logged, &copied); err != nil {
		s.log.Debug("truncate the WAL after secrets left the state", "path", s.path, "err", err)
		return false
	}
	if busy != 0 {
		s.log.Debug("truncate the WAL after secrets left the state: a reader holds an older snapshot; tried again at the next commit of any process, or at close",
			"path", s.path, "frames", logged, "copied", copied)
		return false
	}
	return true
}

// payAtOpen pays, right after Open migrated the state to debtVersion, the VACUUM the migration
// recorded owed: before any command reads or writes, not at its first commit.
func (s *Store) payAtOpen() {
	c, err := s.w.get(context.Background(), 0)
	if err != nil {
		return // the first commit pays it
	}
	defer s.w.put(c)
	tx := &Tx{ctx: context.Background(), c: c, s: s}
	var d debts
	if err := tx.queryRow("SELECT seq, wal_secrets, vacuum FROM state_mark").Scan(&d.seq, &d.walSecrets, &d.vacuum); err == nil {
		s.pay(tx, d)
	}
}

// payOwedWipe pays, at Open, a wipe of the WAL another process owed and left (killed between
// its COMMIT and its checkpoint, or stopped short by a reader and then gone), read on p, the
// pool Open read the schema version on (a reader's read connection). A process that only reads
// (volume status, the dashboard) never commits, so it never read the debt back: on a host where
// only such commands ran after, the secret stayed in the WAL for good. The write connection
// has no busy handler (dsn): a writer holding the lock, or a reader an older snapshot, makes
// the truncation and the debt's clearing fail at once, never wait; the debt stays for the next
// commit or Open. One primary-key read when nothing is owed; the VACUUM owed is left to a commit.
func (s *Store) payOwedWipe(p *pool) {
	c, err := p.get(context.Background(), 0)
	if err != nil {
		return
	}
	var seq, owed int64
	err = (&Tx{ctx: context.Background(), c: c, s: s}).queryRow("SELECT seq, wal_secrets FROM state_mark").Scan(&seq, &owed)
	p.put(c)
	if err != nil || owed == 0 {
		return // no mark yet (a new state), or nothing owed
	}
	if c, err = s.w.get(context.Background(), 0); err != nil {
		return
	}
	defer s.w.put(c)
	s.payWAL(&Tx{ctx: context.Background(), c: c, s: s}, seq)
}

// wipeWALAtClose is the last try of a WAL secretsInWAL says still holds secrets, before the
// write connection closes.
func (s *Store) wipeWALAtClose() {
	if s.w == nil || !s.secretsInWAL.Load() {
		return
	}
	c, err := s.w.get(context.Background(), 0)
	if err != nil {
		return
	}
	defer s.w.put(c)
	tx := &Tx{ctx: context.Background(), c: c, s: s}
	if !s.debts {
		s.wipeWAL(tx)
		return
	}
	var seq int64
	if err := tx.queryRow("SELECT seq FROM state_mark").Scan(&seq); err == nil {
		s.payWAL(tx, seq)
	}
}
