-- 0006: the identity of the socket files (device, inode, change time) a plugin's stored
-- fingerprint was taken through, a JSON list, NULL when unknown. A plugin that restarts makes
-- a new socket file; while the files are the ones recorded, a new volctl process reuses the
-- stored fingerprint instead of asking the plugin again (engine: connectPlugin).
ALTER TABLE plugins ADD COLUMN fingerprint_sockets TEXT;
