-- 0003: a claim that was published and lost its mount (a reboot, a plugin restart) and whose
-- restore has not finished is degraded. The flag is what keeps such a claim held whatever the
-- plugin answers: only an explicit release or detach frees it, never a rollback. The history
-- keeps it too, so a freed claim shows whether it ended degraded.
ALTER TABLE claims ADD COLUMN degraded INTEGER NOT NULL DEFAULT 0 CHECK (degraded IN (0, 1));
ALTER TABLE claim_history ADD COLUMN degraded INTEGER NOT NULL DEFAULT 0;
