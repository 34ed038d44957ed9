-- 0021: what the agent last recorded it does with each plugin's process (agent's runner,
-- engine's RecordSupervision), as JSON {"mode": "runs"|"daemon"|"probed"|"stopped"|"left",
-- "pid": N, "note": "...", "agent_pid": N, "at": unix ns}, NULL for a plugin no agent has
-- recorded. `plugin status` said "Supervised: yes" for every plugin with an exec block, also
-- one whose socket the agent found served by a process it did not start (another agent's,
-- one started by hand, a daemon it could not tell for the plugin's), which it probes only and
-- never stops or restarts: only its log and /healthz said so. A volctl before this version
-- refuses the database by its version.
ALTER TABLE plugins ADD COLUMN supervision TEXT;
