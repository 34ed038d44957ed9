-- 0033: what a claim's target showed once its NodePublishVolume was accepted, as 0032 records a
-- staging's: a JSON object {"dev": device, "root": root within the file system, "ino": inode,
-- "birth": birth time in unix nanoseconds}, of the topmost mount at the target and the
-- directory it shows. A file system mounted over a published target since (by hand, by a
-- program) hands the alloc that, not the volume, and the target is still "a mount": reconcile
-- compares what is topmost there with this. NULL: not known (a claim recorded before, a plugin
-- that mounts nothing at the target itself, a table that cannot say).
ALTER TABLE claims ADD COLUMN target_mount TEXT;
