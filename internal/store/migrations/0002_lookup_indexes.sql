-- 0002: indexes for the per-volume views of history and events (`volume status ID`, the
-- dashboard's detail view), which otherwise scan the whole bounded tables.
CREATE INDEX claim_history_volume ON claim_history (volume_id, id);
CREATE INDEX events_volume ON events (volume_id, id);
