-- 0004: placeholder on branch h3 only, so that h3's 0005 applies (migration numbers must be
-- contiguous). Another branch ships the real 0004: drop this file when merging.
SELECT 1;
