-- 0019: each plugin's last change of capabilities (engine's noteCapabilityChange: it came back
-- from a restart with others), as JSON {"at": unix ns, "lost": [names], "gained": [names]}, NULL
-- for a plugin that never changed. `plugin status` read it back from the plugin's newest
-- plugin-capabilities event, which the event log drops once DefaultEventLimit events follow it:
-- a plugin that lost STAGE_UNSTAGE_VOLUME on a busy host was shown as never having changed. The
-- migration's Go step (backfillCapabilityChanges) fills it from the events the log still holds,
-- read by their index (0016), so what `plugin status` showed before it shows after. A volctl
-- before this version refuses the database by its version.
ALTER TABLE plugins ADD COLUMN capability_change TEXT;
