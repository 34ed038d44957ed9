-- 0022: whether a volume marked deleting is a create's cleanup: CreateVolume answered with a
-- volume volctl cannot use (too small or large, outside the topology asked), recorded deleting
-- with that answer's ID before the DeleteVolume that removes it again (engine's createFailed).
-- 1: that cleanup, which reconcile or a `volume delete` finishes; a refusal of its DeleteVolume
-- then never puts the answer back to ready, as a refused delete of a volume puts it: it was
-- never the volume (an answer refused as unusable, or another state dir's storage published
-- elsewhere). 0: a volume's own delete, or a cleanup recorded before this version, which is
-- taken so. A volctl before this version refuses the database by its version.
ALTER TABLE volumes ADD COLUMN create_cleanup INTEGER NOT NULL DEFAULT 0 CHECK (create_cleanup IN (0, 1));
-- source_gone: 1 for a restore whose answer named the volume its snapshot was taken of, which
-- the plugin no longer had when the restore's CreateVolume was sent (engine's sourcesStillHeld):
-- a new volume under a freed ID (a plugin that reuses IDs), not the source answered in place, so
-- its `volume delete` is not refused as the delete of its own source (refuseDeleteOfItsSource).
ALTER TABLE volumes ADD COLUMN source_gone INTEGER NOT NULL DEFAULT 0 CHECK (source_gone IN (0, 1));
