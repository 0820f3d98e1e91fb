-- kdelay schema version 9: cancels answer true after a fate-store outage
-- (../../docs/fate-protocol.md, "While a reconciliation is pending").
-- Under forwarder.fate_outage_policy=fire a forwarder fires due tasks
-- without a claim while MySQL is unreachable and writes each fire to its
-- journal topic; until the journal is applied, the fate table does not
-- know those tasks were fired, and a cancel would insert CANCELLED and
-- answer "cancelled" for a task already delivered. So the forwarder's
-- first statement once MySQL answers marks its journal pending here (and
-- a reconciliation that finds unapplied records marks it too); the mark
-- is cleared only after every record up to the ends read after it was
-- applied. A cancel inserts its CANCELLED row only when no journal is
-- pending (INSERT ... SELECT ... WHERE NOT EXISTS, one statement), and
-- otherwise answers "not known yet, retry".
--   journal           the journal topic (one per forwarder group)
--   epoch             bumped by every mark: a clear names the epoch its
--                     reconciliation read before its ends, so a mark made
--                     since keeps the journal pending
--   pending_since_ms  NULL = nothing pending
-- kdelay_unclaimed.cancelled_at_ms: when a task recorded with prior
-- "cancelled" was cancelled, so that audit, status and the log tell a
-- cancel made before the fire (the risk the policy takes) from one made
-- after it, in the window before the mark (docs/fate-protocol.md gives
-- its measured size).
-- A new table and a nullable column: releases from 0.2.0 on ignore both
-- (they answer as before).
-- kdelay: floor 0.2.0
CREATE TABLE IF NOT EXISTS kdelay_reconcile (
  journal          VARCHAR(255) NOT NULL,
  epoch            BIGINT UNSIGNED NOT NULL,
  pending_since_ms BIGINT NULL,
  marked_at_ms     BIGINT NOT NULL,
  marked_by        VARCHAR(64) NULL,
  cleared_at_ms    BIGINT NULL,
  cleared_by       VARCHAR(64) NULL,
  PRIMARY KEY (journal)
) ENGINE = InnoDB;
-- kdelay: unless column kdelay_unclaimed.cancelled_at_ms
ALTER TABLE kdelay_unclaimed ADD COLUMN cancelled_at_ms BIGINT NULL;
