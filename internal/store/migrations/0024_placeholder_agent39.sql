-- 0024: a placeholder for agent39's migration (round 39 gave it that number), so that this
-- branch's 0025 follows without a gap. Nothing changes. Dropped when agent39's 0024 is merged.
SELECT 1;
