-- kdelay schema version 7: fires made without a claim
-- (../../docs/reliability.md, "Through a fate-store outage"). Under
-- forwarder.fate_outage_policy=fire a forwarder fires due tasks while
-- MySQL is unreachable and writes each fire to its journal topic; when
-- MySQL answers again the journal is applied: the task's kdelay_fate row
-- becomes FIRED (inserted, or updated from CANCELLED or FIRING), and one
-- row here records the fire and what the fate row said before it:
--   fired      no row, or FIRED already
--   cancelled  a cancel was recorded first, then the task was delivered
--              anyway (kdelayctl audit reports these)
--   firing     a claim was out (its forwarder was cut off by the outage)
--   dead       the row says DEAD (another copy was dead-lettered); stays
-- A new table beside the fate table: nothing a claim writes or reads
-- changes, so every release at or above 0.2.0 keeps working with it.
-- kdelay: floor 0.2.0
CREATE TABLE IF NOT EXISTS kdelay_unclaimed (
  task_id       VARBINARY(128) NOT NULL,
  prior         VARCHAR(16) NOT NULL,
  fire_at_ms    BIGINT NOT NULL,
  fired_at_ms   BIGINT NOT NULL,
  forwarder     VARCHAR(64) NULL,
  src_topic     VARCHAR(255) NULL,
  src_partition INT NULL,
  src_offset    BIGINT NULL,
  dead_reason   VARCHAR(32) NULL,
  applied_at_ms BIGINT NOT NULL,
  PRIMARY KEY (task_id),
  KEY kdelay_unclaimed_applied (applied_at_ms)
) ENGINE = InnoDB;
