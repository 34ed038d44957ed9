-- 0010: an expansion asked of the controller and not yet answered.

-- expand_min/max: the capacity range of a ControllerExpandVolume recorded before it is sent and
-- cleared in the commit that records its answer (or its refusal). Left set, the RPC may have
-- grown the storage with nothing recording it (volctl killed, the answer lost): `volume status`
-- shows it pending, and reconcile or the same expand again sends it again (it is idempotent) and
-- records what the plugin answers. 0 is none pending.
ALTER TABLE volumes ADD COLUMN expand_min INTEGER NOT NULL DEFAULT 0;
ALTER TABLE volumes ADD COLUMN expand_max INTEGER NOT NULL DEFAULT 0;
