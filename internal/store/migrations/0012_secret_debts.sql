-- 0012: the wipes secrets are owed (securedelete.go), kept in the state so that any process
-- pays them, not only the one that owed them. wal_secrets: the seq of the last commit that took
-- secret values out of the state while the WAL, whose older frames still hold them, has not been
-- truncated since; 0 for none. vacuum: 1 while free pages may hold secrets a volctl before this
-- version deleted without secure_delete, which a VACUUM then a truncating checkpoint wipe; set
-- here, for a state made before this version, and cleared once that is done.
ALTER TABLE state_mark ADD COLUMN wal_secrets INTEGER NOT NULL DEFAULT 0;
ALTER TABLE state_mark ADD COLUMN vacuum INTEGER NOT NULL DEFAULT 0 CHECK (vacuum IN (0, 1));
INSERT INTO state_mark (k, magic, id, seq, vacuum) VALUES (1, 'volctl state mark', randomblob(16), 1, 1)
    ON CONFLICT (k) DO UPDATE SET seq = seq + 1, vacuum = 1;
