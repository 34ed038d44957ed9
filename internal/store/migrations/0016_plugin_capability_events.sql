-- 0016: an index of each plugin's plugin-capabilities events, newest last. Every plugin list
-- (`plugin status`, `volctl status`, the dashboard's refresh, the agent's probes, register)
-- shows each plugin's last change of capabilities (engine's lastCapabilityChange), read from
-- the event log: without an index that read walked the whole log (DefaultEventLimit rows)
-- backwards once per plugin, for a plugin that never changed. Partial: only those events, rare,
-- are in it, so no claim's or release's event writes one more b-tree page.
CREATE INDEX events_plugin_capabilities ON events (plugin_id, id) WHERE kind = 'plugin-capabilities';
