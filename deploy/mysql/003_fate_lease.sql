-- kdelay schema version 3: claim leases (../../docs/fate-protocol.md).
-- A FIRING row's claim holds until lease_until, by the database's clock:
-- the claimer renews it while it holds or fires the task, and another
-- forwarder takes the claim over only after it has passed. NULL: no lease
-- (rows claimed before version 3).
-- kdelay: unless column kdelay_fate.lease_until
ALTER TABLE kdelay_fate ADD COLUMN lease_until DATETIME(3) NULL;
