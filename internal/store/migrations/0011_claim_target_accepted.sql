-- 0011: whether a claim's target was accepted (checkTarget passed what NodePublishVolume made
-- there as a mount, and the claim was recorded published). A release resumed from unpublishing
-- (a rollback cut short by a kill, or a NodeUnpublishVolume that failed) could not tell: it
-- took a link at the target for one put in place of a published target and removed it before
-- NodeUnpublishVolume, where the rollback uncut leaves the plugin's own link for it to remove
-- with what it leads to. 1: accepted; 0: not (yet); NULL: a claim recorded before this version,
-- whose release decides from its state as before. The history keeps it with the claim.
ALTER TABLE claims ADD COLUMN target_accepted INTEGER CHECK (target_accepted IN (0, 1));
ALTER TABLE claim_history ADD COLUMN target_accepted INTEGER;
