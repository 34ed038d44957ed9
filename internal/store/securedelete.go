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
// truncates the WAL to nothing. A reader of another process holding a snapshot older than that
// commit (the dashboard, an agent's read) makes the checkpoint stop short; the WAL is then
// truncated by the next commit of this process that finds no such reader, or at Close.

// wipeWAL truncates the WAL after tx committed, on tx's connection (the write connection,
// still this transaction's, now outside any transaction). It records in secretsInWAL whether
// it must be tried again.
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
		s.log.Debug("truncate the WAL after secrets left the state: a reader holds an older snapshot; tried again at the next commit or at close",
			"path", s.path, "frames", logged, "copied", copied)
		return false
	}
	return true
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
	s.wipeWAL(&Tx{ctx: context.Background(), c: c, s: s})
}
