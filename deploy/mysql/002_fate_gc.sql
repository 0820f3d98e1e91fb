-- kdelay schema version 2: an index for gc by due time.
-- `kdelayctl db gc` deletes rows of tasks due before the retention horizon;
-- CANCELLED rows learn their due time when a forwarder drops the task.
-- kdelay: unless index kdelay_fate.kdelay_fate_fire_at
ALTER TABLE kdelay_fate ADD INDEX kdelay_fate_fire_at (fire_at_ms);
