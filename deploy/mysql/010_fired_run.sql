-- kdelay schema version 10: deliveries recorded per run of owner tokens
-- (../../docs/fate-protocol.md, "Runs of delivered claims"). A forwarder
-- claims each task under the owner token '<token_name>:<boot>.<gen>:<seq>',
-- seq counting up through the process's life from the wall clock in
-- microseconds at its start. One row here,
-- (owner_prefix '<token_name>:<boot>.<gen>', seq_lo, seq_hi), says that
-- every kdelay_fate row whose owner is '<owner_prefix>:<s>' with
-- seq_lo <= s <= seq_hi and whose state is FIRING was delivered: readers
-- from this version on answer FIRED for it (status, the claim read-back,
-- audit), and no forwarder takes it over. Runs of one prefix never
-- overlap, so the run with the greatest seq_lo at or below s decides: one
-- dive into the primary key. `kdelayctl db gc` deletes runs created
-- before the horizon of the rows it deletes.
--   owner_prefix   '<token_name>:<boot>.<gen>': token_name <= 20 bytes,
--                  boot 8 hex digits, gen <= 10 digits: <= 40 bytes
--   created_at_ms  when the run was recorded (the forwarder's clock)
-- A new table nobody writes yet (forwarders keep marking each row FIRED):
-- releases from 0.2.0 on ignore it.
-- kdelay: floor 0.2.0
CREATE TABLE IF NOT EXISTS kdelay_fired_run (
  owner_prefix  VARBINARY(64) NOT NULL,
  seq_lo        BIGINT UNSIGNED NOT NULL,
  seq_hi        BIGINT UNSIGNED NOT NULL,
  created_at_ms BIGINT NOT NULL,
  PRIMARY KEY (owner_prefix, seq_lo),
  KEY kdelay_fired_run_created (created_at_ms)
) ENGINE = InnoDB;
