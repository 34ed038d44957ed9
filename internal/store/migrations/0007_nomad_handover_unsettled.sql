-- 0007: what a handover mark knows of its registrations. unsettled: one ended without Nomad
-- saying how (no answer after it was sent, or an error after which Nomad may still apply it),
-- so Nomad may yet take the volume, and its 404 does not let `volctl nomad release` take the
-- mark back until a registration Nomad answers OK settles it. nomad_index: the X-Nomad-Index
-- of the last registration Nomad answered OK (0: none known), the Raft index its state has the
-- volume from: a 404 from a state before it is not Nomad's word (engine/handover.go). Marks
-- made before this migration have neither recorded.
ALTER TABLE nomad_handovers ADD COLUMN unsettled INTEGER NOT NULL DEFAULT 0 CHECK (unsettled IN (0, 1));
ALTER TABLE nomad_handovers ADD COLUMN nomad_index INTEGER NOT NULL DEFAULT 0 CHECK (nomad_index >= 0);
