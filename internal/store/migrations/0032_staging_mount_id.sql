-- 0032: the mount a volume was staged with. A claim joining a staging is published from what the
-- staging path shows; a plugin that answered another volume's NodeStageVolume by mounting it
-- over this one's staging (or anyone mounting there since) had the claim handed that other data.
-- The staging's topmost mount ID (statx STATX_MNT_ID, as /proc/self/mountinfo numbers mounts) is
-- recorded once NodeStageVolume answered and its checks passed; a join compares it with what is
-- topmost there now (0: not known, an older volctl's staging or a kernel before Linux 5.8).
ALTER TABLE stagings ADD COLUMN mount_id INTEGER NOT NULL DEFAULT 0;
