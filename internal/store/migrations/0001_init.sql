-- 0001: volctl's initial schema.
--
-- Conventions: times are INTEGER unix nanoseconds in UTC (0 = unset); JSON columns are TEXT and
-- NULL means "nil" (so a nil map and an empty one stay distinct); booleans are INTEGER 0/1.
-- Secrets and mount flags are stored raw: the engine must send them in RPCs, and the file is 0600
-- in a 0700 directory.

-- plugins: a declaration (from the plugin spec), the last fingerprint, and the last health probe.
CREATE TABLE plugins (
    id                TEXT    NOT NULL PRIMARY KEY,
    type              TEXT    NOT NULL CHECK (type IN ('monolith', 'controller', 'node')),
    socket            TEXT    NOT NULL DEFAULT '',
    controller_socket TEXT    NOT NULL DEFAULT '',
    node_socket       TEXT    NOT NULL DEFAULT '',
    timeout_ns        INTEGER NOT NULL DEFAULT 0,
    exec              TEXT,
    provider          TEXT    NOT NULL DEFAULT '',
    version           TEXT    NOT NULL DEFAULT '',
    plugin_caps       TEXT,
    controller_caps   TEXT,
    node_caps         TEXT,
    node_id           TEXT    NOT NULL DEFAULT '',
    max_volumes       INTEGER NOT NULL DEFAULT 0,
    topology          TEXT,
    fingerprinted_at  INTEGER NOT NULL DEFAULT 0,
    healthy           INTEGER NOT NULL DEFAULT 0 CHECK (healthy IN (0, 1)),
    ready             INTEGER NOT NULL DEFAULT 0 CHECK (ready IN (0, 1)),
    probe_latency_ns  INTEGER NOT NULL DEFAULT 0,
    last_error        TEXT    NOT NULL DEFAULT '',
    probed_at         INTEGER NOT NULL DEFAULT 0,
    created_at        INTEGER NOT NULL,
    updated_at        INTEGER NOT NULL
) STRICT;

-- volumes: plugin_id is deliberately not a foreign key, because `plugin deregister --force` may
-- leave volumes whose plugin is gone.
CREATE TABLE volumes (
    id                  TEXT    NOT NULL PRIMARY KEY,
    namespace           TEXT    NOT NULL DEFAULT '',
    name                TEXT    NOT NULL DEFAULT '',
    plugin_id           TEXT    NOT NULL,
    external_id         TEXT    NOT NULL DEFAULT '',
    csi_name            TEXT    NOT NULL DEFAULT '',
    state               TEXT    NOT NULL CHECK (state IN ('creating', 'ready', 'deleting')),
    capabilities        TEXT,
    mount_options       TEXT,
    secrets             TEXT,
    parameters          TEXT,
    context             TEXT,
    topology_request    TEXT,
    accessible_topology TEXT,
    capacity_bytes      INTEGER NOT NULL DEFAULT 0,
    requested_min       INTEGER NOT NULL DEFAULT 0,
    requested_max       INTEGER NOT NULL DEFAULT 0,
    snapshot_id         TEXT    NOT NULL DEFAULT '',
    clone_id            TEXT    NOT NULL DEFAULT '',
    access_mode         TEXT    NOT NULL DEFAULT '',
    attachment_mode     TEXT    NOT NULL DEFAULT '',
    created_at          INTEGER NOT NULL,
    updated_at          INTEGER NOT NULL
) STRICT;

CREATE INDEX volumes_plugin ON volumes (plugin_id);

-- claims: the live set. AUTOINCREMENT so a freed claim's id is never handed out again and history
-- rows stay unambiguous. RESTRICT: a claimed volume cannot be deleted.
CREATE TABLE claims (
    id              INTEGER NOT NULL PRIMARY KEY AUTOINCREMENT,
    volume_id       TEXT    NOT NULL REFERENCES volumes (id) ON DELETE RESTRICT,
    alloc           TEXT    NOT NULL,
    group_name      TEXT    NOT NULL DEFAULT '',
    mode            TEXT    NOT NULL CHECK (mode IN ('read', 'write')),
    access_mode     TEXT    NOT NULL,
    attachment_mode TEXT    NOT NULL,
    fs_type         TEXT    NOT NULL DEFAULT '',
    mount_flags     TEXT,
    state           TEXT    NOT NULL CHECK (state IN ('taken', 'controller-published', 'node-staged',
                                                      'published', 'unpublishing', 'node-detached',
                                                      'controller-detached')),
    releasing       INTEGER NOT NULL DEFAULT 0 CHECK (releasing IN (0, 1)),
    needs_reconcile INTEGER NOT NULL DEFAULT 0 CHECK (needs_reconcile IN (0, 1)),
    target_path     TEXT    NOT NULL DEFAULT '',
    publish_context TEXT,
    binds           TEXT,
    attempts        INTEGER NOT NULL DEFAULT 0,
    last_rpc        TEXT    NOT NULL DEFAULT '',
    last_code       TEXT    NOT NULL DEFAULT '',
    last_error      TEXT    NOT NULL DEFAULT '',
    created_at      INTEGER NOT NULL,
    updated_at      INTEGER NOT NULL,
    UNIQUE (volume_id, alloc)
) STRICT;

CREATE INDEX claims_state ON claims (state, needs_reconcile);
CREATE INDEX claims_alloc ON claims (alloc);

-- claim_history: freed claims. No foreign key: the record outlives its volume.
CREATE TABLE claim_history (
    id              INTEGER NOT NULL PRIMARY KEY AUTOINCREMENT,
    claim_id        INTEGER NOT NULL,
    volume_id       TEXT    NOT NULL,
    alloc           TEXT    NOT NULL,
    group_name      TEXT    NOT NULL DEFAULT '',
    mode            TEXT    NOT NULL,
    access_mode     TEXT    NOT NULL,
    attachment_mode TEXT    NOT NULL,
    fs_type         TEXT    NOT NULL DEFAULT '',
    mount_flags     TEXT,
    state           TEXT    NOT NULL,
    releasing       INTEGER NOT NULL DEFAULT 0,
    needs_reconcile INTEGER NOT NULL DEFAULT 0,
    target_path     TEXT    NOT NULL DEFAULT '',
    publish_context TEXT,
    binds           TEXT,
    attempts        INTEGER NOT NULL DEFAULT 0,
    last_rpc        TEXT    NOT NULL DEFAULT '',
    last_code       TEXT    NOT NULL DEFAULT '',
    last_error      TEXT    NOT NULL DEFAULT '',
    created_at      INTEGER NOT NULL,
    updated_at      INTEGER NOT NULL,
    freed_at        INTEGER NOT NULL,
    outcome         TEXT    NOT NULL CHECK (outcome IN ('released', 'rolled-back', 'forced'))
) STRICT;

-- stagings: the one NodeStage of a volume on this host. Its reference count is derived from
-- claims by query, never stored, so it cannot drift.
CREATE TABLE stagings (
    volume_id            TEXT    NOT NULL PRIMARY KEY REFERENCES volumes (id) ON DELETE RESTRICT,
    plugin_id            TEXT    NOT NULL,
    staging_path         TEXT    NOT NULL,
    node_id              TEXT    NOT NULL DEFAULT '',
    publish_context      TEXT,
    controller_published INTEGER NOT NULL DEFAULT 0 CHECK (controller_published IN (0, 1)),
    staged               INTEGER NOT NULL DEFAULT 0 CHECK (staged IN (0, 1)),
    updated_at           INTEGER NOT NULL
) STRICT;

CREATE TABLE snapshots (
    plugin_id          TEXT    NOT NULL,
    snapshot_id        TEXT    NOT NULL,
    name               TEXT    NOT NULL DEFAULT '',
    source_volume_id   TEXT    NOT NULL DEFAULT '',
    source_external_id TEXT    NOT NULL DEFAULT '',
    size_bytes         INTEGER NOT NULL DEFAULT 0,
    ready_to_use       INTEGER NOT NULL DEFAULT 0 CHECK (ready_to_use IN (0, 1)),
    parameters         TEXT,
    created_at         INTEGER NOT NULL,
    PRIMARY KEY (plugin_id, snapshot_id)
) STRICT;

CREATE TABLE groups (
    name       TEXT    NOT NULL PRIMARY KEY,
    spec       TEXT    NOT NULL,
    count      INTEGER NOT NULL DEFAULT 0,
    state      TEXT    NOT NULL CHECK (state IN ('running', 'stopped')),
    created_at INTEGER NOT NULL,
    updated_at INTEGER NOT NULL
) STRICT;

-- events: an append-only log, trimmed to the newest N rows by the store on every append.
-- AUTOINCREMENT keeps ids dense and never reused, which is what makes "id <= newest - N" exact.
CREATE TABLE events (
    id        INTEGER NOT NULL PRIMARY KEY AUTOINCREMENT,
    at        INTEGER NOT NULL,
    kind      TEXT    NOT NULL,
    volume_id TEXT    NOT NULL DEFAULT '',
    alloc     TEXT    NOT NULL DEFAULT '',
    plugin_id TEXT    NOT NULL DEFAULT '',
    rpc       TEXT    NOT NULL DEFAULT '',
    code      TEXT    NOT NULL DEFAULT '',
    message   TEXT    NOT NULL DEFAULT ''
) STRICT;
