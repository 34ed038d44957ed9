-- 0008: drops the claims indexes no query uses. Every command reads the live claims whole
-- (ListAll) or by volume (the UNIQUE (volume_id, alloc) index); nothing looks claims up by
-- state or by alloc alone. Each index is a b-tree of its own, so every claim inserted, moved
-- to another state or freed wrote one more page per index to the WAL: 35 pages for a claim and
-- its release instead of 27, a checkpoint (three fsyncs) every 6 commands instead of every 7 or
-- 8, and more for the next command to read back (BENCHMARKS.md).
DROP INDEX claims_state;
DROP INDEX claims_alloc;
