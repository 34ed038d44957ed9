-- 0013: what guards a clone or a restore and its source.

-- clone_spec: a created clone's clone_id as its spec wrote it (a volctl volume ID, or the
-- provider's volume ID), beside clone_id, the storage ID it resolved to: the same spec created
-- again is compared with it, once the source named by its volctl ID is gone. NULL when the
-- volume is not a clone, or was created by a volctl before this version (whose rule stays:
-- the spec's clone_id resolved again, or the storage ID itself).
ALTER TABLE volumes ADD COLUMN clone_spec TEXT;

-- snapshot_deletes: a snapshot delete recorded in the transaction that found no volume being
-- restored from the snapshot, before DeleteSnapshot is sent, and forgotten with the snapshot (or
-- once the plugin is known to keep it). While it is there, a restore from the snapshot is
-- refused before anything is recorded: one recorded after the delete's check, and cut short
-- before its CreateVolume, could never be finished once the snapshot was gone.
CREATE TABLE snapshot_deletes (
    plugin_id   TEXT    NOT NULL,
    snapshot_id TEXT    NOT NULL,
    created_at  INTEGER NOT NULL,
    PRIMARY KEY (plugin_id, snapshot_id)
) STRICT;
