-- kdelay schema version 8: the claim path maintains one secondary index
-- (../../docs/fate-protocol.md, "What each index is for"). Every claim
-- inserts a row and every fire updates it, and each index is written with
-- the row: kdelay_fate_fire_at (version 2) served nothing gc's range on
-- kdelay_fate_decided does not, and kdelay_fate_state (version 4), which
-- let audit skip the fired rows, moved on every FIRED mark. Together they
-- were half of MariaDB's CPU per fire. Audit now reads the whole table
-- once. Dropping an index is a metadata change on MariaDB and MySQL 8;
-- releases from 0.2.0 on run the same statements without it.
-- kdelay: floor 0.2.0
-- kdelay: if index kdelay_fate.kdelay_fate_fire_at
ALTER TABLE kdelay_fate DROP INDEX kdelay_fate_fire_at;
-- kdelay: if index kdelay_fate.kdelay_fate_state
ALTER TABLE kdelay_fate DROP INDEX kdelay_fate_state;
