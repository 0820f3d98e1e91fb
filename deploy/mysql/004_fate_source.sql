-- kdelay schema version 4: where a claimed task's record was read
-- (../../docs/fate-protocol.md, "Audit"). A claim (or takeover) writes the
-- tier topic, partition and offset it read the task from, so that
-- `kdelayctl audit` can tell whether a FIRING row's fire was delivered:
-- its offset below the forwarder group's committed position means it was.
-- NULL: not recorded (rows claimed before version 4).
-- The index lets audit list FIRING rows without reading the whole table.
ALTER TABLE kdelay_fate
  ADD COLUMN IF NOT EXISTS src_topic VARCHAR(255) NULL,
  ADD COLUMN IF NOT EXISTS src_partition INT NULL,
  ADD COLUMN IF NOT EXISTS src_offset BIGINT NULL,
  ADD INDEX IF NOT EXISTS kdelay_fate_state (state, updated_at_ms);
