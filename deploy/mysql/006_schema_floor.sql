-- kdelay schema version 6: each applied version records the oldest kdelay
-- release that can use the schema at that version (docs/upgrading.md).
-- A client or forwarder that finds a newer schema than it knows works on
-- when every newer version's floor is at or below its own release, and
-- refuses only otherwise; so `kdelayctl db migrate` can run while the
-- previous release's forwarders and applications run. From this version
-- on, every migration declares its floor.
-- kdelay: floor 0.2.0
-- kdelay: unless column kdelay_schema.compat_floor
ALTER TABLE kdelay_schema ADD COLUMN compat_floor VARCHAR(32) NULL;
