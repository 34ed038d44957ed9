-- 0032: the mount a volume was staged with. A claim joining a staging is published from what the
-- staging path shows; a plugin that answered another volume's NodeStageVolume by mounting it
-- over this one's staging (or anyone mounting there since) had the claim handed that other data.
-- What the staging path's topmost mount shows is recorded once NodeStageVolume answered and its
-- checks passed: its file system's device and its root within it (as /proc/self/mountinfo gives
-- them, to find it among mounts stacked over it), and the inode and birth time of the directory
-- the path shows (what it is: the same through every mount namespace and after a rename of its
-- source, and not given to another file system as a freed mount ID or anonymous device number
-- is). A join compares them with what is topmost there now. Empty: not known (an older volctl's
-- staging, or a plugin that mounts nothing at the staging path itself).
ALTER TABLE stagings ADD COLUMN mount_dev INTEGER NOT NULL DEFAULT 0;
ALTER TABLE stagings ADD COLUMN mount_root TEXT NOT NULL DEFAULT '';
ALTER TABLE stagings ADD COLUMN mount_ino INTEGER NOT NULL DEFAULT 0;
ALTER TABLE stagings ADD COLUMN mount_birth INTEGER NOT NULL DEFAULT 0;
