-- 0026: how a plugin deregistered with --force while volumes still named it was reached: its
-- type, its sockets as declared and the driver name it last gave (provider). A volume records
-- no socket or driver of its own, so once its plugin's record was gone nothing tied the volume
-- to a socket: a plugin ID registered on that socket since was not taken for the same process
-- and storage (engine's matesBy), and the storage of a volume still claimed could be registered
-- again through it under another volume ID and a second writer admitted on it. A row goes when
-- its plugin ID is registered again, and at a reconcile once no volume names it.
CREATE TABLE plugins_left (
    id                TEXT    NOT NULL PRIMARY KEY,
    type              TEXT    NOT NULL,
    socket            TEXT    NOT NULL DEFAULT '',
    controller_socket TEXT    NOT NULL DEFAULT '',
    node_socket       TEXT    NOT NULL DEFAULT '',
    provider          TEXT    NOT NULL DEFAULT '',
    left_at           INTEGER NOT NULL
) STRICT;
