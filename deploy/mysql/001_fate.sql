-- kdelay schema version 1: the fate table (../../docs/fate-protocol.md).
-- One row per task whose fate is decided; no row = not decided yet.
-- Times are epoch milliseconds written by the deciding process.
CREATE TABLE IF NOT EXISTS kdelay_fate (
  task_id       VARBINARY(128) NOT NULL,
  state         ENUM('FIRING', 'FIRED', 'CANCELLED') NOT NULL,
  fire_at_ms    BIGINT NULL,
  owner         VARCHAR(64) NULL,
  decided_at_ms BIGINT NOT NULL,
  updated_at_ms BIGINT NOT NULL,
  PRIMARY KEY (task_id),
  KEY kdelay_fate_decided (decided_at_ms)
) ENGINE = InnoDB;
