-- 0029: the mounts a claim's volume_mount binds made, in the boot and mount namespace they were
-- made in: a JSON object {"boot": boot ID, "mntns": namespace inode, "at": {destination:
-- {"id": mount ID, "unique": unique mount ID}}},
-- NULL until a bind of the claim is made or found (and for every claim recorded before). A bind
-- of another claim's moved to a claim's destination (a directory above it renamed) is the same
-- volume, in the same mode, at the same path: only the mount's ID tells it from the claim's
-- own, which its release unmounts.
ALTER TABLE claims ADD COLUMN bind_mounts TEXT;
