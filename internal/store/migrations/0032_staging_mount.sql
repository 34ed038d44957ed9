-- 0032: the mount a volume was staged with. A claim joining a staging is published from what the
-- staging path shows; a plugin that answered another volume's NodeStageVolume by mounting it
-- over this one's staging (or anyone mounting there since) had the claim handed that other data.
-- What the staging path's topmost mount shows, its file system's device and its root within it
-- (as /proc/self/mountinfo gives them, the same in every mount namespace that shares the mount,
-- and not given again to another file system as a mount ID is), is recorded once NodeStageVolume
-- answered and its checks passed; a join compares it with what is topmost there now. Empty: not
-- known (an older volctl's staging, or a plugin that mounts nothing at the staging path itself).
ALTER TABLE stagings ADD COLUMN mount_dev INTEGER NOT NULL DEFAULT 0;
ALTER TABLE stagings ADD COLUMN mount_root TEXT NOT NULL DEFAULT '';
