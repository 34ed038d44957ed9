-- 0004: a node expansion owed, and snapshots that outlive their volume and plugin records.

-- node_expand_min/max: ControllerExpandVolume said node_expansion_required (or the plugin only
-- expands on the node) and NodeExpandVolume has not yet succeeded on this node: it is sent where
-- the volume is staged or published, at the next stage/publish otherwise, by `volume expand`
-- again and by reconcile. 0 is none owed.
ALTER TABLE volumes ADD COLUMN node_expand_min INTEGER NOT NULL DEFAULT 0;
ALTER TABLE volumes ADD COLUMN node_expand_max INTEGER NOT NULL DEFAULT 0;

-- What DeleteSnapshot needs once the source volume or the plugin's record is gone: the secrets
-- it was created with, how to reach the plugin's controller, and the driver name (GetPluginInfo)
-- that must answer there.
ALTER TABLE snapshots ADD COLUMN secrets TEXT;
ALTER TABLE snapshots ADD COLUMN plugin_type TEXT NOT NULL DEFAULT '';
ALTER TABLE snapshots ADD COLUMN socket TEXT NOT NULL DEFAULT '';
ALTER TABLE snapshots ADD COLUMN controller_socket TEXT NOT NULL DEFAULT '';
ALTER TABLE snapshots ADD COLUMN provider TEXT NOT NULL DEFAULT '';

-- snapshot_creates: the intent of a CreateSnapshot, committed before it is sent (the provider's
-- snapshot ID is not known yet, so it is keyed by the CSI name, CreateSnapshot's idempotency
-- key). A crash leaves the row: reconcile sends CreateSnapshot again with the name and records
-- the snapshot, or `snapshot delete NAME` does and deletes it.
CREATE TABLE snapshot_creates (
    plugin_id          TEXT    NOT NULL,
    name               TEXT    NOT NULL,
    source_volume_id   TEXT    NOT NULL DEFAULT '',
    source_external_id TEXT    NOT NULL DEFAULT '',
    parameters         TEXT,
    secrets            TEXT,
    plugin_type        TEXT    NOT NULL DEFAULT '',
    socket             TEXT    NOT NULL DEFAULT '',
    controller_socket  TEXT    NOT NULL DEFAULT '',
    provider           TEXT    NOT NULL DEFAULT '',
    created_at         INTEGER NOT NULL,
    PRIMARY KEY (plugin_id, name)
) STRICT;

CREATE INDEX snapshots_name ON snapshots (plugin_id, name);
