-- 0015: each external ID's and snapshot ID's key under spec.SameStorageID (spec.StorageIDKey,
-- after the version of its definition and Unicode tables, spec.StorageIDKeyVersion, and a ':'),
-- indexed: a create's or delete's look for a recorded ID that a plugin which folds case,
-- normalises or cleans IDs takes for the one at hand (engine's nearStorage, nearSnapshot) is one
-- indexed equality, where it was a LIKE pass over every volume, every external ID read into Go
-- when the ID held a non-ASCII character, and every snapshot of the plugin read. The key is
-- computed in Go, so the rows already recorded get theirs in this migration's transaction after
-- this file (migrate.go, goSteps: backfillStorageKeys). NULL (a row written by hand) and a key of
-- another version are read as candidates by every check, never trusted.
ALTER TABLE volumes ADD COLUMN external_key TEXT;
ALTER TABLE snapshots ADD COLUMN snapshot_key TEXT;
CREATE INDEX volumes_external_key ON volumes (external_key);
CREATE INDEX snapshots_key ON snapshots (snapshot_key);
