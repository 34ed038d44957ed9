-- 0031: a pending expansion written over by another. A ControllerExpandVolume whose answer was
-- lost stays pending (expand_min/expand_max, 0010). An expand to another size writes its own
-- intent over it before it sends anything; refused, it puts the earlier one back. Killed between
-- that write and the answer, nothing put it back: reconcile sent the new size again, refused for
-- good by a plugin that cannot hold it, and the earlier expansion, which the plugin may have done,
-- was never recorded. The earlier one is kept here, beneath the pending one, until an answer is
-- recorded; a refusal of the pending one sent again gives way to it (expand.go).
ALTER TABLE volumes ADD COLUMN expand_beneath_min INTEGER NOT NULL DEFAULT 0;
ALTER TABLE volumes ADD COLUMN expand_beneath_max INTEGER NOT NULL DEFAULT 0;
