-- 0022: whether a volume marked deleting is a create's cleanup: CreateVolume answered with a
-- volume volctl cannot use (too small or large, outside the topology asked), recorded deleting
-- with that answer's ID before the DeleteVolume that removes it again (engine's createFailed).
-- 1: that cleanup, which reconcile or a `volume delete` finishes; a refusal of its DeleteVolume
-- then never puts the answer back to ready, as a refused delete of a volume puts it: it was
-- never the volume (an answer refused as unusable, or another state dir's storage published
-- elsewhere). 0: a volume's own delete, or a cleanup recorded before this version, which is
-- taken so. A volctl before this version refuses the database by its version.
ALTER TABLE volumes ADD COLUMN create_cleanup INTEGER NOT NULL DEFAULT 0 CHECK (create_cleanup IN (0, 1));
