-- 0027: the values of a plugin's exec env that left its record (a plugin register with another
-- env, or without an exec block; a deregistration) while a process started with them may still
-- run: the agent keeps a process under mounts running as it was started (docs/agent.md), and
-- its environment holds them. Each stays a secret the engine scrubs from what plugins say
-- (store.Tx.SecretValues) until the agent records that no process of the plugin runs with it
-- (store.plugins.LetGoEnv): it started the declared exec block in its place, or stopped it.
-- Before, once the record no longer held an old value nothing scrubbed it, and the old process
-- echoing it in an error had it printed by plugin status, the event log and the agent's log.
CREATE TABLE exec_env_kept (
    plugin_id TEXT NOT NULL,
    value     TEXT NOT NULL,
    PRIMARY KEY (plugin_id, value)
) STRICT;
