-- volctl schema at version 34
-- Written by `VOLCTL_WRITE_SCHEMA=1 go test ./internal/store -run TestSchemaFileIsTheMigrationsApplied`
-- from the migrations in migrations/, which stay the record of how the schema came to be: a new
-- database gets this in one step (migrate.go, schemaFile). Do not edit it by hand.

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
, fingerprint_sockets TEXT, capability_change TEXT, supervision TEXT) STRICT;

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
, node_expand_min INTEGER NOT NULL DEFAULT 0, node_expand_max INTEGER NOT NULL DEFAULT 0, expand_min INTEGER NOT NULL DEFAULT 0, expand_max INTEGER NOT NULL DEFAULT 0, clone_spec TEXT, external_key TEXT, node_expand_ctrl INTEGER NOT NULL DEFAULT 0 CHECK (node_expand_ctrl IN (0, 1)), create_cleanup INTEGER NOT NULL DEFAULT 0 CHECK (create_cleanup IN (0, 1)), source_gone INTEGER NOT NULL DEFAULT 0 CHECK (source_gone IN (0, 1)), sources_gone TEXT NOT NULL DEFAULT '', node_expand_guess INTEGER NOT NULL DEFAULT 0 CHECK (node_expand_guess IN (0, 1)), expand_beneath_min INTEGER NOT NULL DEFAULT 0, expand_beneath_max INTEGER NOT NULL DEFAULT 0, node_only_from_capacity INTEGER, node_only_from_min INTEGER) STRICT;

CREATE INDEX volumes_plugin ON volumes (plugin_id);

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
    updated_at      INTEGER NOT NULL, degraded INTEGER NOT NULL DEFAULT 0 CHECK (degraded IN (0, 1)), target_accepted INTEGER CHECK (target_accepted IN (0, 1)), target_sent INTEGER CHECK (target_sent IN (0, 1)), bind_mounts TEXT, target_mount TEXT,
    UNIQUE (volume_id, alloc)
) STRICT;

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
, degraded INTEGER NOT NULL DEFAULT 0, target_accepted INTEGER, target_sent INTEGER) STRICT;

CREATE TABLE stagings (
    volume_id            TEXT    NOT NULL PRIMARY KEY REFERENCES volumes (id) ON DELETE RESTRICT,
    plugin_id            TEXT    NOT NULL,
    staging_path         TEXT    NOT NULL,
    node_id              TEXT    NOT NULL DEFAULT '',
    publish_context      TEXT,
    controller_published INTEGER NOT NULL DEFAULT 0 CHECK (controller_published IN (0, 1)),
    staged               INTEGER NOT NULL DEFAULT 0 CHECK (staged IN (0, 1)),
    updated_at           INTEGER NOT NULL
, mount_dev INTEGER NOT NULL DEFAULT 0, mount_root TEXT NOT NULL DEFAULT '', mount_ino INTEGER NOT NULL DEFAULT 0, mount_birth INTEGER NOT NULL DEFAULT 0) STRICT;

CREATE TABLE snapshots (
    plugin_id          TEXT    NOT NULL,
    snapshot_id        TEXT    NOT NULL,
    name               TEXT    NOT NULL DEFAULT '',
    source_volume_id   TEXT    NOT NULL DEFAULT '',
    source_external_id TEXT    NOT NULL DEFAULT '',
    size_bytes         INTEGER NOT NULL DEFAULT 0,
    ready_to_use       INTEGER NOT NULL DEFAULT 0 CHECK (ready_to_use IN (0, 1)),
    parameters         TEXT,
    created_at         INTEGER NOT NULL, secrets TEXT, plugin_type TEXT NOT NULL DEFAULT '', socket TEXT NOT NULL DEFAULT '', controller_socket TEXT NOT NULL DEFAULT '', provider TEXT NOT NULL DEFAULT '', snapshot_key TEXT,
    PRIMARY KEY (plugin_id, snapshot_id)
) STRICT;

CREATE TABLE groups (
    name       TEXT    NOT NULL PRIMARY KEY,
    spec       TEXT    NOT NULL,
    count      INTEGER NOT NULL DEFAULT 0,
    state      TEXT    NOT NULL CHECK (state IN ('running', 'stopped')),
    created_at INTEGER NOT NULL,
    updated_at INTEGER NOT NULL
, run_errors TEXT) STRICT;

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

CREATE INDEX claim_history_volume ON claim_history (volume_id, id);

CREATE INDEX events_volume ON events (volume_id, id);

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

CREATE TABLE nomad_handovers (
    volume_id  TEXT    NOT NULL PRIMARY KEY REFERENCES volumes (id) ON DELETE RESTRICT,
    address    TEXT    NOT NULL,
    region     TEXT    NOT NULL DEFAULT '',
    namespace  TEXT    NOT NULL DEFAULT '',
    forced     INTEGER NOT NULL DEFAULT 0 CHECK (forced IN (0, 1)),
    handed_at  INTEGER NOT NULL
, unsettled INTEGER NOT NULL DEFAULT 0 CHECK (unsettled IN (0, 1)), nomad_index INTEGER NOT NULL DEFAULT 0 CHECK (nomad_index >= 0), nomad_peers TEXT NOT NULL DEFAULT '') STRICT;

CREATE TABLE state_mark (
    k     INTEGER NOT NULL PRIMARY KEY CHECK (k = 1),
    magic TEXT    NOT NULL,
    id    BLOB    NOT NULL,
    seq   INTEGER NOT NULL
, wal_secrets INTEGER NOT NULL DEFAULT 0, vacuum INTEGER NOT NULL DEFAULT 0 CHECK (vacuum IN (0, 1))) STRICT;

CREATE TABLE snapshot_deletes (
    plugin_id   TEXT    NOT NULL,
    snapshot_id TEXT    NOT NULL,
    created_at  INTEGER NOT NULL,
    PRIMARY KEY (plugin_id, snapshot_id)
) STRICT;

CREATE INDEX volumes_external_key ON volumes (external_key);

CREATE INDEX snapshots_key ON snapshots (snapshot_key);

CREATE INDEX events_plugin_capabilities ON events (plugin_id, id) WHERE kind = 'plugin-capabilities';

CREATE TABLE kept_secrets (
    value TEXT NOT NULL PRIMARY KEY
) STRICT;

CREATE TABLE plugins_left (
    id                TEXT    NOT NULL PRIMARY KEY,
    type              TEXT    NOT NULL,
    socket            TEXT    NOT NULL DEFAULT '',
    controller_socket TEXT    NOT NULL DEFAULT '',
    node_socket       TEXT    NOT NULL DEFAULT '',
    provider          TEXT    NOT NULL DEFAULT '',
    left_at           INTEGER NOT NULL
) STRICT;

CREATE TABLE exec_env_kept (
    plugin_id TEXT NOT NULL,
    value     TEXT NOT NULL,
    PRIMARY KEY (plugin_id, value)
) STRICT;

CREATE INDEX volumes_secrets ON volumes (secrets) WHERE secrets IS NOT NULL;

CREATE INDEX volumes_mount_options ON volumes (mount_options) WHERE mount_options IS NOT NULL;

CREATE INDEX claims_mount_flags ON claims (mount_flags) WHERE mount_flags IS NOT NULL;

CREATE INDEX claim_history_mount_flags ON claim_history (mount_flags) WHERE mount_flags IS NOT NULL;
