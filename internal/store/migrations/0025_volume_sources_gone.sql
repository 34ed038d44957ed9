-- 0025: the volumes a restore's snapshot was taken of that the plugin no longer had when the
-- restore's first CreateVolume was sent (engine's sourcesStillHeld), a JSON array of their
-- external IDs; '' for none (and for every volume before this version). A CreateVolume sent
-- again after its answer was lost (reconcile, the create again) finds the plugin listing the
-- restore's own volume under such an ID (a plugin that reuses IDs): the source stays gone, and
-- the answer is not refused as the source, which left the restored volume on the plugin
-- recorded nowhere.
ALTER TABLE volumes ADD COLUMN sources_gone TEXT NOT NULL DEFAULT '';
