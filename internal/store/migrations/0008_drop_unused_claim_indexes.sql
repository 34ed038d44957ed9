-- 0008: drops the claims indexes no query uses. Every command reads the live claims whole
-- (ListAll) or by volume (the UNIQUE (volume_id, alloc) index); nothing looks claims up by
-- state or by alloc alone. Each index is a b-tree of its own, so every claim inserted, moved
-- to another state or freed wrote one more page per index to the WAL: a claim and its release
-- through the CLI wrote 35 pages instead of 27, which a checkpoint copies (with its fsyncs)
-- and the next command reads back.
DROP INDEX claims_state;
DROP INDEX claims_alloc;
