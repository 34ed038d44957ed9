-- 0009: the state mark (walpair.go). Its one row names the database (id, random, made by the
-- first commit that writes to it) and counts the commits that changed a row (seq), each of
-- which updates it, so that every commit's frames in volctl.db-wal carry a copy of it. Open
-- compares the copies in the WAL with the one in volctl.db: a WAL of another database, or one
-- newer than a backup restored beside it, is refused instead of applied to a file it is not of.
CREATE TABLE state_mark (
    k     INTEGER NOT NULL PRIMARY KEY CHECK (k = 1),
    magic TEXT    NOT NULL,
    id    BLOB    NOT NULL,
    seq   INTEGER NOT NULL
) STRICT;
