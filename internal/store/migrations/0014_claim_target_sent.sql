-- 0014: whether a NodePublishVolume of a claim may have been sent (target_sent), recorded in the
-- commit made just before it is sent and kept until NodeUnpublishVolume answered (the target
-- found holding nothing), beside
-- whether the target was accepted (target_accepted, 0011). A link found at a target whose
-- publish may have been sent, and was never accepted, is the plugin's answer: the way back
-- sends NodeUnpublishVolume (its chance to remove the link and what it leads to) before any
-- NodeUnstageVolume or ControllerUnpublishVolume. One at a target no publish was sent to is a
-- hand's: nothing is sent through it. Before, that was guessed from the claim's last error,
-- which an error the plugin answered after acting (UNAVAILABLE), or a later failure written
-- over it, made wrong: the plugin's link was taken for a hand's, and the volume unstaged and
-- detached under the plugin's mount. 1: may have been sent; 0: none since the claim was taken
-- (or its target last unpublished). Claims recorded before this version: a claim still taken or
-- controller-published sent nothing (NodePublishVolume is sent only after node-staged is
-- committed, and a claim is put back to controller-published only with no NodePublishVolume
-- left to undo): a link at its target is a hand's, and a plugin sent NodeUnpublishVolume
-- through it would unmount whatever it leads to; any other may have (the safe side: a link is
-- left to the plugin); NULL where
-- target_accepted is NULL (recorded before 0011), whose release decides from its state as
-- before. The history keeps it with the claim. A volctl before this version refuses the
-- database by its version: it would read a claim's target from target_accepted alone.
ALTER TABLE claims ADD COLUMN target_sent INTEGER CHECK (target_sent IN (0, 1));
ALTER TABLE claim_history ADD COLUMN target_sent INTEGER;
UPDATE claims SET target_sent = CASE WHEN state IN ('taken', 'controller-published') THEN 0 ELSE 1 END WHERE target_accepted IS NOT NULL;
