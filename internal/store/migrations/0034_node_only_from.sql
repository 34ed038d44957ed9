-- 0034: the size a volume was recorded at before its node-only expansion's debt was recorded
-- (node_expand_min with node_expand_ctrl 0 through a plugin whose NodeExpandVolume is the
-- whole expansion): capacity_bytes and requested_min as they were. A plugin that refuses that
-- NodeExpandVolume for good when a later publish or reconcile sends it grew nothing, and the
-- volume is recorded back at this size; without it, the record stayed at the size refused,
-- and an expand to a size the plugin takes was refused as a shrink. NULL: not known (a debt
-- recorded before, or one that is not node-only).
ALTER TABLE volumes ADD COLUMN node_only_from_capacity INTEGER;
ALTER TABLE volumes ADD COLUMN node_only_from_min INTEGER;
