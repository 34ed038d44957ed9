-- 0005: volumes handed over to a Nomad cluster (`volctl nomad register`). While a volume has a
-- row here, Nomad is its orchestrator: claim admission refuses local claims of it, naming the
-- address, until `volctl nomad release` deletes the row. RESTRICT: a handed-over volume cannot
-- be deleted or deregistered locally while Nomad may be using its storage.
CREATE TABLE nomad_handovers (
    volume_id  TEXT    NOT NULL PRIMARY KEY REFERENCES volumes (id) ON DELETE RESTRICT,
    address    TEXT    NOT NULL,
    region     TEXT    NOT NULL DEFAULT '',
    namespace  TEXT    NOT NULL DEFAULT '',
    forced     INTEGER NOT NULL DEFAULT 0 CHECK (forced IN (0, 1)),
    handed_at  INTEGER NOT NULL
) STRICT;
