-- 0028: whether a volume's owed node expansion is volctl's guess rather than the plugin's word
-- (1) or not (0). A ControllerExpandVolume whose answer was lost is sent again, and the plugin,
-- finding the volume at the size already, may answer node_expansion_required false: where the
-- node half of the plugin is not registered, it cannot say whether the node has a step to
-- take, so the step is owed all the same, marked a guess; once the node half is reached and
-- has no EXPAND_VOLUME, a guess is let go rather than reported as a debt it cannot pay.
ALTER TABLE volumes ADD COLUMN node_expand_guess INTEGER NOT NULL DEFAULT 0 CHECK (node_expand_guess IN (0, 1));
