-- 0007: a handover mark made or kept by a registration whose outcome Nomad did not say (no
-- answer after it was sent, or an error after which Nomad may still apply it): Nomad may yet
-- take the volume, so its 404 does not let `volctl nomad release` take the mark back until a
-- registration Nomad answered OK settles it (engine/handover.go). Marks made before this
-- migration were made by registrations whose outcome was settled, or kept without this record.
ALTER TABLE nomad_handovers ADD COLUMN unsettled INTEGER NOT NULL DEFAULT 0 CHECK (unsettled IN (0, 1));
