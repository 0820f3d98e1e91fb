-- Fate DEAD: a task claimed (FIRING) and then dead-lettered, because its
-- target refused it (target-unavailable, too-large); dead_reason is the
-- kdelay-dead-reason header of its dead letter. Appending an ENUM value is
-- a metadata-only change in MariaDB and MySQL; the column is added at the
-- end (instant). Re-runs: MODIFY is idempotent, the column has a guard.
ALTER TABLE kdelay_fate
  MODIFY COLUMN state ENUM('FIRING', 'FIRED', 'CANCELLED', 'DEAD') NOT NULL;
-- kdelay: unless column kdelay_fate.dead_reason
ALTER TABLE kdelay_fate ADD COLUMN dead_reason VARCHAR(32) NULL;
