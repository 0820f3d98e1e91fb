-- kdelay upgrade test (tests/integration/test_upgrade.sh): a stand-in for
-- the next release's migration, planted as deploy/mysql/NNN_upgrade_probe.sql
-- (NNN = the newest version + 1) in a copy of the tree whose release is
-- bumped to the next patch, while no real migration follows the previous
-- release's schema. Additive, with the previous release's floor: what every
-- migration of a rolling upgrade must be (docs/upgrading.md).
-- kdelay: floor 0.2.0
-- kdelay: unless column kdelay_fate.upgrade_probe
ALTER TABLE kdelay_fate ADD COLUMN upgrade_probe INT NULL;
