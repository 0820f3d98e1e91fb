-- kdelay schema version 4: where a claimed task's record was read
-- (../../docs/fate-protocol.md, "Audit"). A claim (or takeover) writes the
-- tier topic, partition and offset it read the task from, so that
-- `kdelayctl audit` can tell whether a FIRING row's fire was delivered:
-- its offset below the forwarder group's committed position means it was.
-- NULL: not recorded (rows claimed before version 4).
-- The index lets audit list FIRING rows without reading the whole table.
-- kdelay: unless column kdelay_fate.src_topic
ALTER TABLE kdelay_fate ADD COLUMN src_topic VARCHAR(255) NULL;
-- kdelay: unless column kdelay_fate.src_partition
ALTER TABLE kdelay_fate ADD COLUMN src_partition INT NULL;
-- kdelay: unless column kdelay_fate.src_offset
ALTER TABLE kdelay_fate ADD COLUMN src_offset BIGINT NULL;
-- kdelay: unless index kdelay_fate.kdelay_fate_state
ALTER TABLE kdelay_fate ADD INDEX kdelay_fate_state (state, updated_at_ms);
