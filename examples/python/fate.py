#!/usr/bin/env python3
# SPDX-License-Identifier: Apache-2.0
"""Cancel a kdelay task, or ask its fate, from Python.

Implements the client side of the fate protocol, docs/fate-protocol.md
"Clients: cancel and status from any language": a cancel is one plain
INSERT of a CANCELLED row (INSERT ... SELECT ... FROM DUAL WHERE NOT
EXISTS a pending journal in kdelay_reconcile, schema 9); a duplicate key
means a row was there first, and reading it back tells too late
(FIRING/FIRED) or dead (DEAD) from cancelled already. Whichever insert
lands first -- the cancel or a forwarder's claim -- decides, so
"cancelled" is final: the task is never delivered. While a journal is
pending ("While a reconciliation is pending": fires made without a claim
through a fate-store outage may not be in the fate table yet) the insert
adds no row; the read-back then answers too late (FIRING/FIRED) or dead
(DEAD), and anything else (no row, CANCELLED) is "unknown": nothing was
recorded, retry. On a schema before 9 (no kdelay_reconcile) the cancel
is the plain INSERT ... VALUES of the releases before. Status reads the
row; from schema 10 a FIRING row that a run of delivered claims
(kdelay_fired_run, "Runs of delivered claims") covers answers FIRED.

Needs PyMySQL (Debian: python3-pymysql). As a command:

    KDELAY_MYSQL_PASSWORD=... fate.py --mysql mysql://app@db:3306/kdelay \\
        cancel order-42-reminder
    fate.py status order-42-reminder

prints one JSON line per id ({"id", "outcome"[, "fate"][, "error"]} for
cancel; kdelayctl status --json's object for status). Exit 0: every id
cancelled / answered; 3: a task was too late; 5: a task was dead-lettered;
1: an outcome is unknown (retry: a cancel is idempotent), a pending
reconciliation's "unknown" included; 2: bad arguments. --not-before
EPOCH_MS connects first, then waits until that instant. The password
comes from the URL or $KDELAY_MYSQL_PASSWORD, never from an option. As a
module: conn = connect(url, password); cancel(conn, task_id) ->
("cancelled" | "too_late" | "dead", fate read back or None) (raises
Unknown; Reconciling, a subclass, while a reconciliation is pending);
status(conn, task_id) -> dict; Session(url, password).run(cancel,
task_id) adds the protocol's retries.
"""

import argparse
import json
import os
import sys
import time
import urllib.parse

# The kdelay release whose protocol this file follows: a schema version
# above 6 is usable only while its compat_floor is at or below it.
PROTOCOL_RELEASE = (0, 4, 0)
SCHEMA_MIN = 5  # the DEAD state and dead_reason
SCHEMA_FLOORS_FROM = 6
SCHEMA_RUNS = 10  # kdelay_fired_run: a FIRING row a run covers is FIRED

STATUS_SQL = ("SELECT state, fire_at_ms, owner, decided_at_ms, updated_at_ms, "
              "dead_reason FROM kdelay_fate WHERE task_id = %s")
# From schema 10 (docs/fate-protocol.md "Runs of delivered claims"): the
# same row and whether a run of delivered claims covers it (1: FIRED).
COVERED_SQL = (
    "COALESCE(kdelay_fate.state = 'FIRING' "
    "AND kdelay_fate.owner LIKE '_%%:_%%:_%%' AND kdelay_fate.owner NOT LIKE '%%:%%:%%:%%' "
    "AND CAST(CAST(SUBSTRING_INDEX(kdelay_fate.owner, ':', -1) AS UNSIGNED) AS BINARY) "
    "= CAST(SUBSTRING_INDEX(kdelay_fate.owner, ':', -1) AS BINARY) "
    "AND (SELECT r.seq_hi FROM kdelay_fired_run r "
    "WHERE r.owner_prefix = CAST(SUBSTRING_INDEX(kdelay_fate.owner, ':', 2) AS BINARY) "
    "AND r.seq_lo <= CAST(SUBSTRING_INDEX(kdelay_fate.owner, ':', -1) AS UNSIGNED) "
    "AND kdelay_fate.task_id IS NOT NULL ORDER BY r.seq_lo DESC LIMIT 1) "
    ">= CAST(SUBSTRING_INDEX(kdelay_fate.owner, ':', -1) AS UNSIGNED), 0)")
STATUS_SQL_RUNS = ("SELECT state, fire_at_ms, owner, decided_at_ms, updated_at_ms, "
                   "dead_reason, " + COVERED_SQL + " AS delivered "
                   "FROM kdelay_fate WHERE task_id = %s")

# Errors after which the same statement may be sent again on a new
# connection: connection lost (client 2006, 2013; server shutdown 1053),
# a read-only server during a failover (1290, 1836), lock wait and
# deadlock (1205, 1213).
RETRYABLE = {2006, 2013, 1053, 1290, 1836, 1205, 1213}
ATTEMPTS = 3
RETRY_PAUSE_S = 0.25

DUP_KEY = 1062
NO_SUCH_TABLE = 1146

# The cancel: one statement that inserts CANCELLED only while no journal is
# pending (schema 9). Under REPEATABLE READ its subquery takes shared locks,
# so a concurrent mark waits for it or it for the mark.
CANCEL_SQL = ("INSERT INTO kdelay_fate (task_id, state, decided_at_ms, "
              "updated_at_ms) SELECT %s, 'CANCELLED', %s, %s FROM DUAL "
              "WHERE NOT EXISTS (SELECT 1 FROM kdelay_reconcile "
              "WHERE pending_since_ms IS NOT NULL)")
# A schema before 9 has no kdelay_reconcile, and no forwarder of a release
# that marks journals runs on it: the plain INSERT of the releases before.
CANCEL_SQL_BEFORE_9 = ("INSERT INTO kdelay_fate (task_id, state, "
                       "decided_at_ms, updated_at_ms) VALUES "
                       "(%s, 'CANCELLED', %s, %s)")
RECONCILING = ("not known yet: a reconciliation after a fate-store outage "
               "is pending, and this task may have been fired without a "
               "claim during it; nothing was recorded: retry (kdelayctl "
               "status shows the pending reconciliation)")


class Unknown(Exception):
    """The outcome is unknown: the cancel may or may not have landed."""


class Reconciling(Unknown):
    """Not known yet: a journal is pending in kdelay_reconcile (fires made
    without a claim through a fate-store outage may not be applied yet), so
    the cancel recorded nothing. Retry."""


class SchemaError(Exception):
    """The database's schema is not one this client can use."""


def parse_url(url):
    """mysql://user[:password]@host[:port]/db[?ssl-mode=M&ssl-ca=F] ->
    PyMySQL connect() keyword arguments. Raises ValueError."""
    u = urllib.parse.urlsplit(url)
    if u.scheme != "mysql" or not u.hostname:
        raise ValueError("want mysql://user[:password]@host[:port]/db")
    try:
        port = u.port or 3306
    except ValueError:
        raise ValueError("the port is not a number") from None
    db = urllib.parse.unquote(u.path.lstrip("/")) or "kdelay"
    kw = {
        "host": u.hostname,
        "port": port,
        "user": urllib.parse.unquote(u.username or ""),
        "database": db,
    }
    if u.password is not None:
        kw["password"] = urllib.parse.unquote(u.password)
    mode, ca = "PREFERRED", None
    for name, value in urllib.parse.parse_qsl(u.query, keep_blank_values=True):
        if name == "ssl-mode":
            mode = value.upper()
            if mode not in ("DISABLED", "PREFERRED", "REQUIRED", "VERIFY_CA",
                            "VERIFY_IDENTITY"):
                raise ValueError(f"ssl-mode {value!r} is not one of DISABLED, "
                                 "PREFERRED, REQUIRED, VERIFY_CA, VERIFY_IDENTITY")
        elif name == "ssl-ca":
            ca = value
        else:
            raise ValueError(f"unknown parameter {name!r} (ssl-mode, ssl-ca)")
    if mode in ("VERIFY_CA", "VERIFY_IDENTITY") and not ca:
        raise ValueError(f"ssl-mode {mode} needs ssl-ca=FILE")
    if mode in ("REQUIRED", "VERIFY_CA", "VERIFY_IDENTITY"):
        # TLS as MySQL's ssl-mode and kdelay's C library take it: REQUIRED
        # encrypts, and checks the certificate only when ssl-ca is given;
        # VERIFY_CA checks it against ssl-ca; VERIFY_IDENTITY checks the
        # host name as well. PyMySQL does no opportunistic TLS: PREFERRED
        # connects in plain.
        import ssl

        ctx = ssl.create_default_context(cafile=ca) if ca else ssl.create_default_context()
        ctx.check_hostname = mode == "VERIFY_IDENTITY"
        if not ca:
            ctx.verify_mode = ssl.CERT_NONE
        kw["ssl"] = ctx
    return kw


def _release(text):
    try:
        parts = tuple(int(p) for p in text.split("."))
    except (AttributeError, ValueError):
        return None
    return parts if len(parts) == 3 else None


def check_schema(conn):
    """The schema's version; raises SchemaError unless this protocol holds
    for it."""
    import pymysql

    try:
        with conn.cursor() as cur:
            cur.execute("SELECT COALESCE(MAX(version), 0) FROM kdelay_schema")
            top = cur.fetchone()[0]
            rows = []
            if top > SCHEMA_FLOORS_FROM:  # compat_floor exists from version 6
                cur.execute("SELECT version, compat_floor FROM kdelay_schema "
                            "WHERE version > %s", (SCHEMA_FLOORS_FROM,))
                rows = cur.fetchall()
    except pymysql.err.ProgrammingError as e:
        if e.args and e.args[0] == NO_SUCH_TABLE:
            raise SchemaError("no kdelay schema here: run `kdelayctl db migrate`") from None
        raise
    if top < SCHEMA_MIN:
        raise SchemaError(f"database schema is version {top}, this client "
                          f"needs {SCHEMA_MIN}: run `kdelayctl db migrate`")
    for version, floor in rows:
        f = _release(floor)
        if f is None or f > PROTOCOL_RELEASE:
            raise SchemaError(f"database schema version {version} needs kdelay "
                              f"{floor or '(no floor recorded)'}; this client "
                              "follows 0.4.0: upgrade the client")
    return top


def connect(url, password=None):
    """A connection in autocommit (each statement its own transaction), the
    schema checked. password, when given, overrides the URL's."""
    import pymysql

    kw = parse_url(url)
    if password is not None:
        kw["password"] = password
    conn = pymysql.connect(charset="utf8mb4", autocommit=True,
                           connect_timeout=10, read_timeout=30,
                           write_timeout=30, **kw)
    try:
        # status reads it: from schema 10 a run may cover a FIRING row.
        conn.kdelay_schema = check_schema(conn)
    except BaseException:
        conn.close()
        raise
    return conn


def _id_bytes(task_id):
    b = task_id.encode("utf-8") if isinstance(task_id, str) else bytes(task_id)
    text = b.decode("utf-8")  # raises UnicodeDecodeError: not UTF-8
    if not 1 <= len(b) <= 128 or any(ord(c) < 0x20 or ord(c) == 0x7F for c in text):
        raise ValueError(f"task id {text!r} is not 1..128 bytes of UTF-8 "
                         "without control characters")
    return b


def status(conn, task_id):
    """The task's fate as `kdelayctl status --json` prints it: a FIRING row
    a run of delivered claims covers (schema 10) answers FIRED."""
    version = getattr(conn, "kdelay_schema", None)
    if version is None:  # a connection connect() did not make
        version = conn.kdelay_schema = check_schema(conn)
    runs = version >= SCHEMA_RUNS
    with conn.cursor() as cur:
        # The id is bound as bytes: compared byte for byte, never SQL text.
        cur.execute(STATUS_SQL_RUNS if runs else STATUS_SQL, (_id_bytes(task_id),))
        row = cur.fetchone()
    text = task_id if isinstance(task_id, str) else task_id.decode("utf-8")
    out = {"id": text, "fate": "UNDECIDED", "fire_at_ms": None,
           "decided_at_ms": None, "updated_at_ms": None, "owner": None}
    if row:
        fate = "FIRED" if row[0] == "FIRING" and runs and int(row[6] or 0) == 1 else row[0]
        out.update(fate=fate, fire_at_ms=row[1], owner=row[2] or None,
                   decided_at_ms=row[3], updated_at_ms=row[4])
        if row[5]:
            out["dead_reason"] = row[5]
    return out


def _insert_cancelled(conn, tid, now):
    """The cancel's INSERT: rows inserted (1, or 0 while a journal is
    pending), None when a row exists (duplicate key)."""
    import pymysql

    # Schema 9's statement; when its kdelay_reconcile is missing (error
    # 1146 naming it: a schema before 9), the one before.
    for sql in (CANCEL_SQL, CANCEL_SQL_BEFORE_9):
        try:
            with conn.cursor() as cur:
                # A plain INSERT, never INSERT IGNORE: only "row exists"
                # may pass, every other problem stays an error.
                return cur.execute(sql, (tid, now, now))
        except pymysql.err.IntegrityError as e:
            if not e.args or e.args[0] != DUP_KEY:
                raise
            return None
        except pymysql.err.ProgrammingError as e:
            if sql == CANCEL_SQL_BEFORE_9 or _errno(e) != NO_SUCH_TABLE \
                    or "kdelay_reconcile" not in str(e.args[1:]):
                raise


def cancel(conn, task_id):
    """One try: ("cancelled" | "too_late" | "dead", the fate read back or
    None when this insert decided). Raises Reconciling when a journal is
    pending and the task's row (if any) is neither FIRING, FIRED nor DEAD,
    Unknown when the row vanished in between, a pymysql error on any other
    failure."""
    now = time.time_ns() // 1_000_000
    inserted = _insert_cancelled(conn, _id_bytes(task_id), now)
    if inserted == 1:
        return "cancelled", None
    fate = status(conn, task_id)["fate"]  # the row decides, if it can
    if fate in ("FIRING", "FIRED"):
        return "too_late", fate
    if fate == "DEAD":
        return "dead", fate
    if inserted == 0:  # nothing inserted, no row or CANCELLED: a journal is pending
        raise Reconciling(RECONCILING)
    if fate == "CANCELLED":  # a row was there first
        return "cancelled", fate
    raise Unknown(f"the row of {task_id!r} changed during the cancel (now {fate})")


def _errno(e):
    return e.args[0] if getattr(e, "args", None) and isinstance(e.args[0], int) else None


class Session:
    """A connection that reconnects for a retry (for the command line and
    any caller that wants the retry policy of the protocol): ATTEMPTS tries
    RETRY_PAUSE_S apart, on a new connection after a RETRYABLE error, on
    the same one while a reconciliation is pending; then Unknown
    (Reconciling when the last try met a pending reconciliation)."""

    def __init__(self, url, password=None):
        self.url, self.password, self.conn = url, password, None

    def run(self, fn, task_id):
        import pymysql

        last = None
        for attempt in range(ATTEMPTS):
            if attempt:
                time.sleep(RETRY_PAUSE_S)
            try:
                if self.conn is None:
                    self.conn = connect(self.url, self.password)
                return fn(self.conn, task_id)
            except Reconciling as e:
                last = e  # a journal is pending: ask again, same connection
            except pymysql.err.MySQLError as e:
                last = e
                if _errno(e) not in RETRYABLE:
                    raise Unknown(str(e)) from None
                self.close()  # reconnect (and check the schema) first
        kind = Reconciling if isinstance(last, Reconciling) else Unknown
        raise kind(f"{last} (after {ATTEMPTS} attempts)")

    def close(self):
        if self.conn is not None:
            try:
                self.conn.close()
            except Exception:
                pass
            self.conn = None


def main(argv=None):
    p = argparse.ArgumentParser(
        prog="fate.py",
        description="Cancel kdelay tasks or show their fate (docs/fate-protocol.md, Clients).")
    p.add_argument("--mysql", default=os.environ.get("KDELAY_MYSQL_URL"),
                   help="mysql://user@host[:port]/db[?ssl-mode=M&ssl-ca=F] "
                   "(default $KDELAY_MYSQL_URL; password from $KDELAY_MYSQL_PASSWORD)")
    p.add_argument("--not-before", type=int, metavar="EPOCH_MS",
                   help="connect, then wait until this instant before the first id")
    p.add_argument("verb", choices=("cancel", "status"))
    p.add_argument("ids", nargs="+", metavar="ID")
    a = p.parse_args(argv)
    if not a.mysql:
        p.error("--mysql URL or $KDELAY_MYSQL_URL is required")
    try:
        parse_url(a.mysql)
        for i in a.ids:
            _id_bytes(i)
    except (ValueError, UnicodeError) as e:
        p.error(str(e))
    try:
        import pymysql  # noqa: F401
    except ImportError:
        print("fate.py: error: the pymysql module is missing (Debian: apt-get "
              "install python3-pymysql)", file=sys.stderr)
        return 1

    password = None
    if parse_url(a.mysql).get("password") is None:
        password = os.environ.get("KDELAY_MYSQL_PASSWORD")
    session = Session(a.mysql, password)
    try:
        session.run(lambda conn, _: None, None)  # connect and check first
    except (Unknown, SchemaError) as e:
        print(f"fate.py: error: {e}", file=sys.stderr)
        return 1
    if a.not_before is not None:
        time.sleep(max(0, a.not_before - time.time_ns() // 1_000_000) / 1000)

    unknown = too_late = dead = False
    for task_id in a.ids:
        try:
            if a.verb == "status":
                out = session.run(status, task_id)
            else:
                outcome, fate = session.run(cancel, task_id)
                out = {"id": task_id, "outcome": outcome, "fate": fate}
                too_late |= outcome == "too_late"
                dead |= outcome == "dead"
        except (Unknown, SchemaError) as e:
            unknown = True
            out = {"id": task_id, "error": str(e)}
            if a.verb == "cancel":
                out.update(outcome="unknown", fate=None)
            print(f"fate.py: error: {a.verb} {task_id!r}: {e}", file=sys.stderr)
        print(json.dumps(out), flush=True)
    session.close()
    return 1 if unknown else 3 if too_late else 5 if dead else 0


if __name__ == "__main__":
    sys.exit(main())
