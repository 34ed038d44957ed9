-- 0022: no change. Round 38 gave number 0022 to another change (recheck38's, if it needs one)
-- and 0023 to the handover mark's cluster; a change that takes 0022 replaces this file.
SELECT 1;
