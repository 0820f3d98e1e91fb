# SPDX-License-Identifier: Apache-2.0
"""Integration: firing through a fate-store outage (issue 25). Four
forwarders on the stack's broker and MariaDB, each with topics of its own
and one database shared, one per delivery mode and
forwarder.fate_outage_policy:

    alo-fire  at_least_once, fire, fate_outage_after=5s
    eos-fire  exactly_once,  fire, fate_outage_after=5s
    alo-hold  at_least_once, hold
    eos-hold  exactly_once,  hold

Per forwarder, 40 tasks due 1..18.6 s after MySQL stops (one every 450 ms),
4 due 5..8 s after it is back, and task X, due 10.5 s in, cancelled before
the outage. MySQL is stopped (`stack.sh mysql-stop`) for 22 s; meanwhile
`kdelayctl status` and `cancel` must fail and say MySQL cannot answer.

Last, the at_least_once fire forwarder is restarted with two journal
records it did not apply (a new task, and X's again): its start applies
them, and X stays on record as cancelled, counted once.

A sixth forwarder, alo-window (at_least_once, fire), has N_WINDOW tasks
due W_DUE_MS into the outage, all fired without a claim. From the moment
MySQL is started, a thread cancels them one after another on one
connection (the protocol of examples/python/fate.py) and reads
kdelay_reconcile every 10, until alo-window's mark is cleared and a whole
pass answers too late; then `kdelayctl cancel -` of them all. Asserted (issue 35: 24 of 45 such cancels exited 0 in the 0.7 s
before the journal was applied): no cancel issued after a journal was
seen pending answers CANCELLED; some answer UNKNOWN; after the clear
kdelayctl answers TOO_LATE for all; a cancel that answered CANCELLED before the
first mark (the window left: MySQL answering, the forwarder not yet) is
reported by audit. The window and the answers are printed.

Two more, alo-lost and eos-lost (fire, at_least_once and exactly_once,
a database of their own), have N_LOST tasks due L_DUE_MS into the
outage, N_LOST_CANCELLED of them cancelled before it; once they have
arrived the test deletes each one's journal topic. alo-lost lives on:
when MySQL answers it applies its own fires from memory, and every
cancelled task delivered is reported by audit (issue 35: with the
journal deleted, none was). eos-lost gets SIGTERM in the outage: its
exit logs the id of every fire it could not apply
(event=unclaimed_fire_unapplied), the only trace left.

A fifth forwarder, alo-kill (at_least_once, fire), has N_KILL tasks due
at once K_DUE_MS into the outage, N_KILL_CANCELLED of them cancelled
before it, and is killed (SIGKILL) KILL_AFTER_MS after their fire-at, in
the middle of their fires; it starts again once MySQL is back. Asserted:
no task lost, and every cancelled task that reached the target is
reported by `kdelayctl audit` (delivered yes, or maybe: a record of
intent alone) and by `kdelayctl status` — a fire is never delivered with
nothing in the journal, whatever the crash point (issue 35: before the
records of intent, the kill left 200 of 200 such tasks unreported).

Asserted, per forwarder: every task but X arrives exactly once
(at_least_once: at least once), none before its fire-at; under fire, each
within SLACK_MS of max(fire_at, stop + 5 s) (the outage is seen at the
first failed claim, at most a second after the stop); under hold, X never
arrives; under fire, X arrives (the promise the policy gives up), and
after MySQL is back: every task has a FIRED row within RECONCILE_MS,
`kdelayctl audit` reports X as cancelled then fired, `kdelayctl status X`
says so, and the forwarder's metrics counted the unclaimed fires. One
figures line per forwarder is printed.

What each scenario proves, and where the stage logic is proven instead
(issue 37: integration keeps what needs the real MySQL and broker). All
kept; the outage is shortened from 45 s to 22 s (the last scenario's
events, the journals deleted at 14 s, fit in it), the tasks due in it
closer together, and the targets read until 20 s after it (from 30 s;
the last task is due 8 s after it):
    alo-fire, eos-fire   kept: a real outage's recovery end to end (the
        journal applied into real SQL, audit, status, /readyz, metrics);
        when fires without claims begin is proven by test_outage_after,
        the pending mark and its clearing by test_journal_vt
    alo-hold, eos-hold   kept: claims held through a real stop, X dropped
        by its CANCELLED row after it
    alo-kill             kept: a real SIGKILL in the middle of fires
    alo-window           kept: cancels on real SQL racing the mark
    alo-lost, eos-lost   kept: a journal topic deleted on the broker
    restart_applies      kept: a journal applied at a real start"""
import json
import os
import re
import secrets
import signal
import subprocess
import sys
import tempfile
import time
import urllib.parse
import urllib.request

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
SRC = os.environ.get("KDELAY_SOURCE_DIR",
                     os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__)))))
sys.path.insert(0, os.path.join(SRC, "examples", "python"))
import it_kafka  # noqa: E402  (beside this file)
import fate as pyfate  # noqa: E402  (examples/python: its URL parser)
import schedule as pysched  # noqa: E402
from confluent_kafka import Consumer, Producer  # noqa: E402
from confluent_kafka.admin import AdminClient, NewTopic  # noqa: E402

TIERS = os.environ.get("KDELAY_TEST_TIERS", "1s,10s,1m")  # a measurement may set the ladder
# A kdelay_fate row's state as readers see it: a FIRING row a run of
# delivered claims covers (kdelay_fired_run) is FIRED (it_env.h's
# IT_FATE_STATE_SQL).
FATE_STATE = ("CASE WHEN kdelay_fate.state = 'FIRING' AND EXISTS (SELECT 1 FROM "
              "kdelay_fired_run r WHERE r.owner_prefix = "
              "CAST(SUBSTRING_INDEX(kdelay_fate.owner, ':', 2) AS BINARY) AND "
              "r.seq_lo <= CAST(SUBSTRING_INDEX(kdelay_fate.owner, ':', -1) AS UNSIGNED) "
              "AND r.seq_hi >= CAST(SUBSTRING_INDEX(kdelay_fate.owner, ':', -1) AS UNSIGNED)) "
              "THEN 'FIRED' ELSE kdelay_fate.state END")
OUTAGE_MS = 22000
AFTER_MS = 5000
N_DURING = 40      # due 1..18.6 s after the stop
DURING_STEP_MS = 450
N_AFTER = 4        # due 5..8 s after MySQL is started again
X_DUE_MS = 10500   # the cancelled task
READ_AFTER_MS = 20000  # the targets are read until this long after the outage
SLACK_MS = 2500    # fire: lateness past max(fire_at, stop + AFTER_MS)
RECONCILE_MS = 20000
MODES = [("alo-fire", "at_least_once", "fire"), ("eos-fire", "exactly_once", "fire"),
         ("alo-hold", "at_least_once", "hold"), ("eos-hold", "exactly_once", "hold")]
N_KILL = 600          # alo-kill's tasks, all due K_DUE_MS after the stop
N_KILL_CANCELLED = 60  # of them cancelled before the outage
K_DUE_MS = 9000
KILL_AFTER_MS = 12
N_WINDOW = 1000    # alo-window's tasks, due W_DUE_MS after the stop
W_DUE_MS = 10000
WINDOW_MS = 30000  # the cancels' rounds end by then after MySQL's start
N_LOST = 40           # alo-lost's and eos-lost's tasks, due L_DUE_MS in
N_LOST_CANCELLED = 10
L_DUE_MS = 7000
L_DELETE_MS = 14000   # their journals deleted then; eos-lost stopped after


def now_ms():
    return time.time_ns() // 1_000_000


def log(msg):
    print(f"test_outage: {msg}", flush=True)


class Failed(Exception):
    pass


def fail(msg):
    raise Failed(msg)


class Stack:
    """The database, the stack script, the tools."""

    def __init__(self):
        self.tag = secrets.token_hex(4)
        self.db = f"kdit_out_{self.tag}"
        root = os.environ.get("KDELAY_MYSQL_URL") or fail("KDELAY_MYSQL_URL is not set")
        self.root_url = root
        # The database replaced, the query (TLS settings) kept.
        u = urllib.parse.urlsplit(root)
        self.url = urllib.parse.urlunsplit((u.scheme, u.netloc, f"/{self.db}", u.query, ""))
        self.ctl = os.environ["KDELAY_CTL"]
        self.fwd_bin = os.environ["KDELAY_FORWARDER"]
        self.stack_sh = os.path.join(SRC, "deploy", "local", "stack.sh")
        self.kconf = it_kafka.kafka_conf()
        self.tmp = tempfile.mkdtemp(prefix="test_outage.")

    def sql(self, statement, db=True):
        import pymysql

        kw = pyfate.parse_url(self.root_url)
        kw.pop("database")
        if db:
            kw["database"] = self.db
        if "password" not in kw and os.environ.get("MYSQL_PWD"):
            kw["password"] = os.environ["MYSQL_PWD"]
        conn = pymysql.connect(autocommit=True, **kw)
        try:
            with conn.cursor() as cur:
                cur.execute(statement)
                return cur.fetchall()
        finally:
            conn.close()

    def cleanup(self, fwds, extra_topics=()):
        """Stops fwds, drops the database, deletes their topics (and
        extra_topics); a failure here is logged, the verdict stands."""
        for f in fwds:
            f.stop()
        try:
            self.sql(f"DROP DATABASE IF EXISTS `{self.db}`", db=False)
        except Exception as e:
            log(f"cleanup: {e}")
        topics = list(extra_topics)
        for f in fwds:
            topics += [f.target, f"{f.prefix}.dead", f"{f.prefix}.journal"]
            topics += [f"{f.prefix}.tier.{t}" for t in TIERS.split(",")]
        AdminClient(self.kconf).delete_topics(sorted(set(topics)))

    def stack(self, *verb):
        r = subprocess.run([self.stack_sh] + list(verb), capture_output=True, text=True,
                           timeout=120)
        if r.returncode:
            fail(f"stack.sh {' '.join(verb)}: {r.stderr.strip()[-400:]}")

    def mysql_start(self, bound_ms=60000):
        """Starts MySQL and returns when it answers (a restarted server
        recovers first), failing after bound_ms."""
        self.stack("mysql-start")
        until = now_ms() + bound_ms
        while True:
            try:
                self.sql("SELECT 1")
                return
            except Exception:
                if now_ms() > until:
                    fail(f"MySQL does not answer {bound_ms // 1000} s after its start")
                time.sleep(0.05)


class Fwd:
    """One forwarder with its topics."""

    def __init__(self, st, name, delivery, policy, url=None):
        self.st, self.name, self.delivery, self.policy = st, name, delivery, policy
        self.url = url or st.url  # its fate table's database
        self.prefix = f"itout{st.tag}{name.replace('-', '')}"
        self.target = f"{self.prefix}.target"
        self.group = f"{self.prefix}-group"
        self.log_path = os.path.join(st.tmp, f"{name}.log")
        self.proc = None
        self.fire_at = {}      # id -> fire-at
        self.arrived = {}      # id -> [append times]
        self.x = None
        self.http_port = None
        self.extra = []        # more forwarder arguments

    def ctl(self, *args, check=True, timeout=60):
        argv = [self.st.ctl, "--brokers", self.st.kconf["bootstrap.servers"],
                "--mysql", self.url, "-X", f"topic_prefix={self.prefix}",
                "-X", f"tiers={TIERS}", "-X", f"forwarder.group_id={self.group}"]
        if os.environ.get("KDELAY_KAFKA_CONFIG"):
            argv += ["--kafka-config", os.environ["KDELAY_KAFKA_CONFIG"]]
        r = subprocess.run(argv + list(args), capture_output=True, text=True, timeout=timeout)
        if check and r.returncode:
            fail(f"{self.name}: kdelayctl {' '.join(args)}: exit {r.returncode}: "
                 f"{r.stderr.strip()[-400:]}")
        return r

    def start(self):
        self.ctl("topics", "create", "--partitions", "2")
        admin = AdminClient(self.st.kconf)
        admin.create_topics([NewTopic(self.target, 2, 1)])[self.target].result(30)
        self.start_process()

    def start_process(self):
        argv = [self.st.fwd_bin, "--brokers", self.st.kconf["bootstrap.servers"],
                "--mysql", self.url, "-X", f"topic_prefix={self.prefix}",
                "-X", f"forwarder.group_id={self.group}", "-X", f"tiers={TIERS}",
                "-X", f"forwarder.instance={self.name}",
                "-X", "forwarder.hold_horizon=2s", "-X", "forwarder.stats_interval=5s",
                "-X", f"forwarder.delivery={self.delivery}",
                "-X", f"forwarder.fate_outage_policy={self.policy}",
                "-X", f"forwarder.fate_outage_after={AFTER_MS}ms",
                "-X", "forwarder.retry_max=1s",
                "-X", "forwarder.http_listen=127.0.0.1:0"]
        if os.environ.get("KDELAY_KAFKA_CONFIG"):
            argv += ["--kafka-config", os.environ["KDELAY_KAFKA_CONFIG"]]
        argv += self.extra
        self.proc = subprocess.Popen(argv, stdout=subprocess.DEVNULL,
                                     stderr=open(self.log_path, "a"))

    def wait_assigned(self, deadline):
        while time.time() < deadline:
            text = self.text()
            if "event=partitions_assigned" in text:
                m = re.search(r"event=http_listening .*?port=(\d+)", text)
                self.http_port = int(m.group(1)) if m else None
                return
            if self.proc.poll() is not None:
                break
            time.sleep(0.1)
        fail(f"{self.name}: no partitions in time: {self.log_path}")

    def text(self):
        with open(self.log_path, encoding="utf-8", errors="replace") as f:
            return f.read()

    def schedule(self, producer, t0):
        tiers = pysched.parse_tiers(TIERS)
        dues = [t0 + 1000 + DURING_STEP_MS * i for i in range(N_DURING)]
        dues += [t0 + OUTAGE_MS + 5000 + 1000 * i for i in range(N_AFTER)]
        for due in dues:
            tid = pysched.schedule(producer, self.prefix, tiers, self.target, None,
                                   b"v", due)
            self.fire_at[tid] = due
        self.x = pysched.schedule(producer, self.prefix, tiers, self.target, None, b"x",
                                  t0 + X_DUE_MS)

    def metrics(self):
        if not self.http_port:
            return {}
        with urllib.request.urlopen(f"http://127.0.0.1:{self.http_port}/metrics",
                                    timeout=5) as r:
            out = {}
            for line in r.read().decode().splitlines():
                if line and not line.startswith("#"):
                    name, _, value = line.rpartition(" ")
                    out[name] = float(value)
            return out

    def readyz(self):
        try:
            with urllib.request.urlopen(f"http://127.0.0.1:{self.http_port}/readyz",
                                        timeout=5) as r:
                return r.status, r.read().decode()
        except urllib.error.HTTPError as e:
            return e.code, e.read().decode()

    def stop(self):
        """SIGTERM; the exit status (None: it had to be killed)."""
        if self.proc and self.proc.poll() is None:
            self.proc.send_signal(signal.SIGTERM)
            try:
                self.proc.wait(30)
            except subprocess.TimeoutExpired:
                self.proc.kill()
                return None
        return self.proc.returncode if self.proc else 0


def consume(st, fwds, until_ms):
    """Reads every forwarder's target (read_committed) until until_ms."""
    by_topic = {f.target: f for f in fwds}
    # A group of its own per reader (readers running at once must not
    # share partitions, nor read them again after a rebalance).
    c = Consumer({**st.kconf, "group.id": f"itout{st.tag}-reader-{secrets.token_hex(4)}",
                  "auto.offset.reset": "earliest", "isolation.level": "read_committed",
                  "enable.auto.commit": False})
    c.subscribe(list(by_topic))
    try:
        while now_ms() < until_ms:
            m = c.poll(0.2)
            if m is None or m.error():
                continue
            f = by_topic[m.topic()]
            hdrs = dict(m.headers() or [])
            tid = hdrs.get("kdelay-id", b"").decode()
            f.arrived.setdefault(tid, []).append(m.timestamp()[1])
    finally:
        c.close()


def check(st, f, t0, t_back):
    """Asserts what f's run must show; returns its figures line."""
    late, lost, dups, early = [], 0, 0, 0
    for tid, due in f.fire_at.items():
        ts = f.arrived.get(tid, [])
        if not ts:
            lost += 1
            continue
        if len(ts) > 1:
            dups += 1
        first = min(ts)
        if first < due:
            early += 1
        base = max(due, t0 + AFTER_MS) if f.policy == "fire" else due
        late.append(first - base)
    x_arrived = len(f.arrived.get(f.x, []))
    late.sort()
    p50 = late[len(late) // 2] if late else -1
    mx = late[-1] if late else -1
    if lost or early:
        fail(f"{f.name}: lost {lost}, early {early}")
    if f.delivery == "exactly_once" and dups:
        fail(f"{f.name}: {dups} duplicates in exactly_once")
    during = [t for t, d in f.fire_at.items() if d < t0 + OUTAGE_MS]
    figures = (f"{f.name}: tasks {len(f.fire_at)}, lost 0, early 0, duplicates {dups}, "
               f"cancelled X delivered {x_arrived}")
    if f.policy == "fire":
        if mx > SLACK_MS:
            fail(f"{f.name}: a fire {mx} ms past max(fire_at, stop + {AFTER_MS} ms)")
        if x_arrived != 1:
            fail(f"{f.name}: X (cancelled before the outage) arrived {x_arrived} times, want 1")
        figures += f"; lateness past max(fire_at, stop+5s) p50 {p50} ms max {mx} ms"
    else:
        if x_arrived:
            fail(f"{f.name}: X, cancelled, arrived under hold")
        held = sorted(min(f.arrived[t]) - f.fire_at[t] for t in during)
        figures += (f"; lateness of the {len(during)} due in the outage p50 "
                    f"{held[len(held) // 2]} ms max {held[-1]} ms (MySQL back after "
                    f"{t_back - t0} ms)")
    return figures


def reconcile(st, f, t_back):
    """Under fire: every task fired through the outage (due before MySQL
    came back) FIRED within RECONCILE_MS; audit and status report X; the
    metrics counted. Returns the figures."""
    ids = [t for t, due in f.fire_at.items() if due < t_back] + [f.x]
    hexes = ",".join("X'%s'" % t.encode().hex() for t in ids)
    deadline = t_back + RECONCILE_MS
    while True:
        rows = dict(st.sql(f"SELECT task_id, {FATE_STATE} FROM kdelay_fate WHERE task_id IN ({hexes})"))
        fired = sum(1 for v in rows.values() if v == "FIRED")
        if fired == len(ids):
            break
        if now_ms() > deadline:
            bad = {k.decode(): v for k, v in rows.items() if v != "FIRED"}
            fail(f"{f.name}: {fired} of {len(ids)} FIRED {RECONCILE_MS} ms after MySQL "
                 f"came back; not: {list(bad.items())[:5]}, "
                 f"no row: {len(ids) - len(rows)}")
        time.sleep(0.2)
    took = now_ms() - t_back
    unclaimed = st.sql(f"SELECT prior, COUNT(*) FROM kdelay_unclaimed WHERE task_id IN ({hexes}) "
                       "GROUP BY prior")
    priors = {p: n for p, n in unclaimed}
    if priors.get("cancelled") != 1:
        fail(f"{f.name}: kdelay_unclaimed priors {priors}, want X as cancelled")
    a = f.ctl("audit", check=False)
    if a.returncode != 1 or f.x not in a.stdout or "fired_after_cancel=" not in a.stdout:
        fail(f"{f.name}: audit exit {a.returncode}, want 1 and X reported: {a.stdout[-600:]}")
    line = next(l for l in a.stdout.splitlines() if f.x in l)
    s = f.ctl("status", "--json", f.x)
    status = json.loads(s.stdout)
    if status.get("fate") != "FIRED" or status.get("unclaimed") != "cancelled":
        fail(f"{f.name}: status of X {status}")
    # /metrics is published every second: the application's counts soon.
    deadline = now_ms() + 5000
    while True:
        m = f.metrics()
        unc = m.get("kdelay_forwarder_fired_unclaimed_total", 0)
        after = m.get("kdelay_forwarder_fired_after_cancel_total", 0)
        if (unc >= 1 and after == 1) or now_ms() > deadline:
            break
        time.sleep(0.2)
    if unc < 1 or after != 1:
        fail(f"{f.name}: metrics fired_unclaimed {unc}, fired_after_cancel {after}")
    applied = re.findall(r"event=journal_applied ok=1 records=([1-9]\d*) .*? ms=(\d+)", f.text())
    if not applied:
        fail(f"{f.name}: no event=journal_applied line with records")
    return (f"{f.name}: the {len(ids)} tasks fired through the outage FIRED {took} ms "
            f"after MySQL answered again (the forwarder applied {applied[-1][0]} journal "
            f"records in {applied[-1][1]} ms); kdelay_unclaimed "
            f"{sum(priors.values())} rows {priors}; fired_unclaimed {int(unc)}; audit: {line}")


def restart_applies(st, f, producer):
    """A journal its forwarder did not apply (a crash between the fire and
    the application) is applied at the next start, and applying one again
    changes nothing: a record of a new task Y, and X's once more."""
    y = pysched.new_ulid()
    now = now_ms()
    for tid in (y, f.x):
        value = (f"v=1 fire_at={now} fired_at={now} topic={f.prefix}.tier.1s "
                 f"partition=0 offset=999999 forwarder={f.name}")
        producer.produce(f"{f.prefix}.journal", key=tid.encode(), value=value.encode())
    if producer.flush(30):
        fail("journal records not acknowledged in 30 s")
    rc = f.stop()
    if rc != 0:
        fail(f"{f.name}: exit status {rc} after SIGTERM (want 0)")
    size = os.path.getsize(f.log_path)
    f.start_process()
    deadline = time.time() + 60
    while time.time() < deadline:
        with open(f.log_path, encoding="utf-8", errors="replace") as fp:
            fp.seek(size)
            m = re.search(r"event=journal_applied ok=1 records=(\d+) applied=\d+ "
                          r"recorded=(\d+) fired_after_cancel=(\d+)", fp.read())
        if m:
            break
        time.sleep(0.2)
    else:
        fail(f"{f.name}: no journal applied after the restart")
    hexes = ",".join("X'%s'" % t.encode().hex() for t in (y, f.x))
    rows = dict(st.sql(f"SELECT task_id, {FATE_STATE} FROM kdelay_fate WHERE task_id IN ({hexes})"))
    priors = dict(st.sql(f"SELECT task_id, prior FROM kdelay_unclaimed WHERE task_id IN ({hexes})"))
    want = {y.encode(): "FIRED", f.x.encode(): "FIRED"}
    if rows != want or priors.get(f.x.encode()) != "cancelled" or priors.get(y.encode()) != "fired":
        fail(f"{f.name}: after the restart rows {rows}, records {priors}")
    if m.group(1) != "2" or m.group(2) != "1" or m.group(3) != "0":
        fail(f"{f.name}: the restart's application: {m.group(0)} (want records=2 "
             "recorded=1 fired_after_cancel=0)")
    return (f"{f.name}: restarted with 2 journal records unapplied (a new task, and the "
            f"cancelled X again): {m.group(0)}; both FIRED, X still on record as cancelled")


def schedule_many(f, producer, n, due, value):
    """n tasks of f due at due (epoch ms)."""
    tiers = pysched.parse_tiers(TIERS)
    for _ in range(n):
        tid = pysched.schedule(producer, f.prefix, tiers, f.target, None, value, due)
        f.fire_at[tid] = due


def cancel_many(f, ids, why):
    """Cancels ids of f in one `kdelayctl cancel -`; each must answer."""
    argv = [f.st.ctl, "--mysql", f.url, "-X", f"topic_prefix={f.prefix}",
            "-X", f"tiers={TIERS}", "cancel", "-"]
    r = subprocess.run(argv, input="\n".join(ids) + "\n", capture_output=True, text=True,
                       timeout=120)
    if r.returncode:
        fail(f"{f.name}: cancel of {len(ids)} ({why}): exit {r.returncode} "
             f"{r.stderr[-300:]}")
    return set(ids)


def kill_check(st, k, cancelled, kill_ms):
    """After the restart: nothing lost; every cancelled task delivered
    reported by audit and status. Returns the figures."""
    deadline = now_ms() + 30000
    while True:
        lost = [t for t in k.fire_at if t not in cancelled and not k.arrived.get(t)]
        if not lost or now_ms() > deadline:
            break
        time.sleep(0.2)
    if lost:
        fail(f"alo-kill: {len(lost)} of {N_KILL - N_KILL_CANCELLED} tasks lost after the "
             f"kill and restart (e.g. {lost[0]})")
    delivered_cancelled = {t for t in cancelled if k.arrived.get(t)}
    dups = sum(1 for t in k.fire_at if len(k.arrived.get(t, [])) > 1)
    deadline = now_ms() + 30000
    while True:  # the restart applies the journal first
        a = k.ctl("audit", "--json", check=False)
        try:
            rep = {r["id"]: r["delivered"]  # the database is shared
                   for r in json.loads(a.stdout).get("fired_after_cancel", [])
                   if r["id"] in k.fire_at}
        except (ValueError, KeyError) as e:
            fail(f"alo-kill: audit --json: {e}: {a.stdout[-300:]}")
        if delivered_cancelled <= set(rep) or now_ms() > deadline:
            break
        time.sleep(0.5)
    missing = delivered_cancelled - set(rep)
    if missing:
        fail(f"alo-kill: {len(missing)} of {len(delivered_cancelled)} cancelled tasks "
             f"delivered are not reported by audit (e.g. {sorted(missing)[0]})")
    if set(rep) - cancelled:
        fail(f"alo-kill: audit reports tasks never cancelled: {sorted(set(rep) - cancelled)[:3]}")
    for tid in sorted(delivered_cancelled)[:3]:
        s = json.loads(k.ctl("status", "--json", tid).stdout)
        if s.get("unclaimed") != "cancelled" or s.get("delivered") not in ("yes", "maybe"):
            fail(f"alo-kill: status of a cancelled task delivered: {s}")
    maybe = sum(1 for v in rep.values() if v == "maybe")
    m = re.findall(r"event=journal_applied ok=1 records=(\d+) .*?intents=(\d+) "
                   r"unconfirmed=(\d+)", k.text())
    # Every fire is announced by an acknowledged record of intent: as
    # many intents at least as tasks that arrived before the kill.
    before = sum(1 for t in k.fire_at if k.arrived.get(t) and min(k.arrived[t]) < kill_ms)
    intents = sum(int(x[1]) for x in m)
    if intents < before:
        fail(f"alo-kill: {before} tasks arrived before the kill, {intents} records of "
             "intent applied")
    # A duplicate is a fire whose delivery record the kill prevented: its
    # intent was counted unconfirmed.
    unconfirmed = sum(int(x[2]) for x in m)
    if dups > unconfirmed:
        fail(f"alo-kill: {dups} duplicates, {unconfirmed} intents unconfirmed")
    return (f"alo-kill: {N_KILL} tasks due at once, {N_KILL_CANCELLED} cancelled before "
            f"the outage, killed {KILL_AFTER_MS} ms after their fire-at: arrived before "
            f"the kill {before}, records of intent applied {intents}; lost 0; "
            f"duplicates {dups}; cancelled delivered {len(delivered_cancelled)}, all "
            f"reported (audit: {len(rep)} fired_after_cancel, {len(rep) - maybe} "
            f"delivered yes, {maybe} maybe); journal applications "
            f"(records, intents, unconfirmed) {m[-3:]}")


def window_cancels(w, out):
    """From MySQL's start: cancels of alo-window's tasks one after another
    on one connection (examples/python/fate.py, the protocol kdelayctl
    follows too), kdelay_reconcile read every 10, until its mark is
    cleared and a whole pass answered too late (or WINDOW_MS); then one
    `kdelayctl cancel -` of them all. out["cancels"] gets (ms, a journal
    seen pending before it, id, answer), out["ctl"] kdelayctl's answers."""
    import pymysql

    ids = sorted(w.fire_at)
    end = now_ms() + WINDOW_MS
    cancels = out.setdefault("cancels", [])
    kw = pyfate.parse_url(w.st.url)
    if "password" not in kw and os.environ.get("MYSQL_PWD"):
        kw["password"] = os.environ["MYSQL_PWD"]
    conn = None
    # MySQL's first answer, to 5 ms, on the connection the cancels then
    # use: a connection made only after it (TLS, a loaded host) came once
    # after the forwarder had applied its journal (305 ms), and no cancel
    # could answer UNKNOWN.
    while now_ms() < end:
        try:
            conn = pymysql.connect(autocommit=True, connect_timeout=2, **kw)
            with conn.cursor() as cur:
                cur.execute("SELECT 1")
            out["first_answer"] = now_ms()
            break
        except Exception:
            if conn is not None:
                conn.close()
            conn = None
            time.sleep(0.005)
    seen, i, late_run = False, 0, 0
    while now_ms() < end and late_run < len(ids):
        tid = ids[i % len(ids)]
        try:
            if conn is None:
                conn = pymysql.connect(autocommit=True, **kw)
            if i % 10 == 0 and not seen:
                with conn.cursor() as cur:
                    cur.execute("SELECT COUNT(*) FROM kdelay_reconcile "
                                "WHERE pending_since_ms IS NOT NULL")
                    seen = cur.fetchone()[0] > 0
                    if seen:
                        out["first_pending"] = now_ms()
            issued = now_ms()
            answer = pyfate.cancel(conn, tid)[0].upper()
        except pyfate.Reconciling:
            answer = "UNKNOWN"
        except Exception:
            answer = "ERROR"
            if conn is not None:
                conn.close()
            conn = None
            time.sleep(0.01)
        cancels.append((issued, seen, tid, answer))
        cleared = "event=reconcile_pending_cleared" in w.text() if i % 50 == 0 else False
        out["cleared"] = out.get("cleared") or cleared
        late_run = late_run + 1 if answer == "TOO_LATE" and out["cleared"] else 0
        i += 1
    if conn is not None:
        conn.close()
    argv = [w.st.ctl, "--mysql", w.st.url, "-X", f"topic_prefix={w.prefix}",
            "-X", f"tiers={TIERS}", "cancel", "-"]
    r = subprocess.run(argv, input="\n".join(ids) + "\n", capture_output=True,
                       text=True, timeout=120)
    out["ctl"] = {p[0]: p[1] for p in (l.split(" ", 2) for l in r.stdout.splitlines())
                  if len(p) >= 2}


def window_check(st, w, out, t_back):
    """Asserts the cancels of the reconciliation window; its figures."""
    cancels = out.get("cancels", [])
    arrived = {t for t, ts in w.arrived.items() if ts and min(ts) < t_back}
    if len(arrived & set(w.fire_at)) < N_WINDOW:
        fail(f"alo-window: {len(arrived & set(w.fire_at))} of {N_WINDOW} tasks "
             "arrived during the outage")
    first_answer = out.get("first_answer")
    first_pending = out.get("first_pending")
    # The forwarder's own mark, by its log's clock (this host's).
    m = re.search(r"ts=(\S+)Z [^\n]*event=reconcile_pending_marked", w.text())
    marked = None
    if m:
        import datetime
        marked = int(datetime.datetime.strptime(m.group(1), "%Y-%m-%dT%H:%M:%S.%f")
                     .replace(tzinfo=datetime.timezone.utc).timestamp() * 1000)
    if marked is None or first_answer is None:
        fail(f"alo-window: no mark ({marked}) or no answer from MySQL ({first_answer})")
    early_ok, counts = set(), {}
    for issued, seen, tid, a in cancels:
        counts[a] = counts.get(a, 0) + 1
        if a == "CANCELLED":
            if seen:
                fail(f"alo-window: a cancel issued {issued - first_pending} ms after "
                     f"a journal was seen pending answered CANCELLED for {tid}, "
                     "delivered during the outage")
            early_ok.add(tid)
    if not counts.get("UNKNOWN"):
        fail(f"alo-window: no cancel answered UNKNOWN (answers {counts}; MySQL "
             f"answered at {first_answer}, pending seen at {first_pending})")
    ctl = out.get("ctl", {})
    if len(ctl) != N_WINDOW or set(ctl.values()) != {"TOO_LATE"}:
        fail(f"alo-window: kdelayctl cancel after the clear: {len(ctl)} answers, "
             f"{sorted(set(ctl.values()))}")
    if early_ok:  # the window left: reported, never silent
        deadline = now_ms() + 20000
        while True:  # the reconciliation puts them on record
            a = w.ctl("audit", "--json", check=False)
            rep = {r["id"]: r.get("cancelled")
                   for r in json.loads(a.stdout).get("fired_after_cancel", [])}
            if early_ok <= set(rep) or now_ms() > deadline:
                break
            time.sleep(0.5)
        if not early_ok <= set(rep):
            fail(f"alo-window: {len(early_ok - set(rep))} cancels answered CANCELLED "
                 "before the mark and are not reported by audit")
        wrong = {t: rep[t] for t in early_ok if rep[t] != "after_fire"}
        if wrong:
            fail(f"alo-window: audit does not say these were cancelled after their "
                 f"fire: {sorted(wrong.items())[:3]}")
        if "cancelled=after_fire" not in w.text():
            fail("alo-window: no event=fired_after_cancel ... cancelled=after_fire line")
    m = re.search(r"event=reconcile_pending_cleared .*?settle_ms=(\d+)", w.text())
    return (f"alo-window: {N_WINDOW} tasks fired without a claim; {len(cancels)} cancels "
            f"from MySQL's start: {counts}; the forwarder marked its journal pending "
            f"{marked - first_answer} ms after MySQL first answered (probed every 5 ms); "
            f"CANCELLED before the mark {len(early_ok)} (all reported by audit as "
            f"cancelled after_fire); kdelayctl after the clear: TOO_LATE x{len(ctl)}; "
            f"cleared after settle_ms={m.group(1) if m else '-'}")


def lost_check(alive, stopped, cancelled):
    """alo-lost reports every cancelled task delivered (from memory);
    eos-lost's exit logged each unapplied fire's id. Figures line."""
    delivered = {t for t in cancelled[alive.name] if alive.arrived.get(t)}
    deadline = now_ms() + 30000
    while True:
        a = alive.ctl("audit", "--json", check=False)
        try:
            rep = {r["id"] for r in json.loads(a.stdout).get("fired_after_cancel", [])}
        except ValueError:
            rep = set()
        if delivered <= rep or now_ms() > deadline:
            break
        time.sleep(0.5)
    if not delivered or not delivered <= rep:
        fail(f"alo-lost: {len(delivered - rep)} of {len(delivered)} cancelled tasks "
             "delivered are not reported by audit with the journal deleted")
    if "event=journal_records_missing" not in alive.text():
        fail("alo-lost: no event=journal_records_missing line")
    lost = {t for t in cancelled[stopped.name] if stopped.arrived.get(t)}
    logged = set(re.findall(r"event=unclaimed_fire_unapplied id=\"?([^\" ]+)",
                            stopped.text()))
    if not lost or not lost <= logged:
        fail(f"eos-lost: {len(lost - logged)} of {len(lost)} cancelled tasks delivered "
             "are not in its exit's event=unclaimed_fire_unapplied lines")
    m = re.search(r"event=journal_records_missing .*?recorded=(\d+)", alive.text())
    return (f"journal deleted in the outage: alo-lost applied {m.group(1)} fires from "
            f"memory, its {len(delivered)} cancelled tasks delivered all reported by "
            f"audit; eos-lost (SIGTERM in the outage) logged {len(logged)} unapplied "
            f"fires by id at exit, its {len(lost)} cancelled tasks delivered among them")


def main():
    st = Stack()
    fwds = [Fwd(st, *m) for m in MODES]
    kill = Fwd(st, "alo-kill", "at_least_once", "fire")
    win = Fwd(st, "alo-window", "at_least_once", "fire")
    win_out = {}
    lost_url = st.url.replace(f"/{st.db}", f"/{st.db}_lost", 1)
    lost = [Fwd(st, "alo-lost", "at_least_once", "fire", url=lost_url),
            Fwd(st, "eos-lost", "exactly_once", "fire", url=lost_url)]
    lost_cancelled = {}
    kill_cancelled = set()
    mysql_stopped = False
    try:
        st.sql(f"CREATE DATABASE `{st.db}`", db=False)
        st.sql(f"CREATE DATABASE `{st.db}_lost`", db=False)
        fwds[0].ctl("db", "migrate")
        lost[0].ctl("db", "migrate")
        for f in fwds + [kill, win] + lost:
            f.start()
        deadline = time.time() + 60
        for f in fwds + [kill, win] + lost:
            f.wait_assigned(deadline)
        producer = Producer({**st.kconf, "enable.idempotence": True, "acks": "all"})
        t0 = now_ms() + 8000  # MySQL stops then
        for f in fwds:
            f.schedule(producer, t0)
        schedule_many(kill, producer, N_KILL, t0 + K_DUE_MS, b"k")
        schedule_many(win, producer, N_WINDOW, t0 + W_DUE_MS, b"w")
        for f in lost:
            schedule_many(f, producer, N_LOST, t0 + L_DUE_MS, b"l")
        if producer.flush(30):
            fail("tasks not acknowledged in 30 s")
        for f in fwds:  # cancelled before the outage: OK
            f.ctl("cancel", f.x)
        kill_cancelled = cancel_many(kill, list(kill.fire_at)[:N_KILL_CANCELLED],
                                     "before the outage")
        for f in lost:
            lost_cancelled[f.name] = cancel_many(
                f, sorted(f.fire_at)[:N_LOST_CANCELLED], "before the outage")
        time.sleep(max(0, t0 - now_ms()) / 1000)
        st.stack("mysql-stop")
        mysql_stopped = True
        log(f"MySQL stopped; back in {OUTAGE_MS} ms")
        # The reader runs meanwhile, on a thread of its own.
        import threading

        reader = threading.Thread(target=consume, args=(st, fwds + [kill, win] + lost,
                                                         t0 + OUTAGE_MS + READ_AFTER_MS))
        reader.start()
        # alo-kill dies in the middle of its fires.
        time.sleep(max(0, t0 + K_DUE_MS + KILL_AFTER_MS - now_ms()) / 1000)
        kill.proc.kill()
        kill.proc.wait()
        kill_ms = now_ms()
        log(f"alo-kill killed {now_ms() - t0 - K_DUE_MS} ms after its tasks' fire-at")
        time.sleep(max(0, t0 + 12000 - now_ms()) / 1000)
        # The lost ones' journals go (all their tasks arrived by now),
        # then eos-lost stops.
        time.sleep(max(0, t0 + L_DELETE_MS - now_ms()) / 1000)
        gone = [f"{f.prefix}.journal" for f in lost]
        admin = AdminClient(st.kconf)
        for fut in admin.delete_topics(gone).values():
            fut.result(30)
        time.sleep(1)
        rc = lost[1].stop()
        if rc != 0:
            fail(f"eos-lost: exit {rc} after SIGTERM in the outage")
        r = fwds[0].ctl("status", fwds[0].x, check=False)
        if r.returncode == 0 or "MySQL" not in r.stderr:
            fail(f"status during the outage: exit {r.returncode} {r.stderr.strip()[-300:]}")
        c = fwds[0].ctl("cancel", list(fwds[0].fire_at)[-1], check=False)
        if c.returncode == 0:
            fail("a cancel during the outage answered OK")
        code, body = fwds[0].readyz()
        if "firing without claims" not in body:
            fail(f"/readyz during the outage: {code} {body!r}")
        log(f"during the outage: status exit {r.returncode} ({r.stderr.strip()[-120:]!r}); "
            f"cancel exit {c.returncode}; /readyz {code} {body.strip()!r}")
        time.sleep(max(0, t0 + OUTAGE_MS - now_ms()) / 1000)
        canceller = threading.Thread(target=window_cancels, args=(win, win_out),
                                     daemon=True)
        canceller.start()
        st.mysql_start()
        mysql_stopped = False
        t_back = now_ms()
        kill.start_process()
        lines = []
        for f in fwds:
            if f.policy == "fire":
                lines.append(reconcile(st, f, t_back))
        reader.join()
        canceller.join()
        lines.append(window_check(st, win, win_out, t_back))
        lines.append(lost_check(lost[0], lost[1], lost_cancelled))
        lines.append(kill_check(st, kill, kill_cancelled, kill_ms))
        for f in fwds:
            lines.append(check(st, f, t0, t_back))
            text = f.text()
            if f.policy == "fire":
                for ev in ("event=fate_outage ", "event=fate_outage_over", "event=journal_applied ok=1"):
                    if ev not in text:
                        fail(f"{f.name}: no {ev.strip()} line")
        lines.append(restart_applies(st, fwds[0], producer))
        for f in fwds:
            if f.policy == "fire":  # every task, those due after it too
                hexes = ",".join("X'%s'" % t.encode().hex() for t in f.fire_at)
                n = st.sql(f"SELECT COUNT(*) FROM kdelay_fate WHERE {FATE_STATE} = 'FIRED' "
                           f"AND task_id IN ({hexes})")[0][0]
                if n != len(f.fire_at):
                    fail(f"{f.name}: {n} of {len(f.fire_at)} tasks FIRED at the end")
            rc = f.stop()
            if rc != 0:
                fail(f"{f.name}: exit status {rc} after SIGTERM (want 0): {f.log_path}")
        for line in lines:
            log(line)
        log("PASS")
        return 0
    except Failed as e:
        log(f"FAIL: {e}")
        for f in fwds:
            log(f"{f.name} log: {f.log_path}")
        return 1
    finally:
        if mysql_stopped:
            st.stack("mysql-start")
        st.cleanup(fwds + [kill, win] + lost)
        try:
            st.sql(f"DROP DATABASE IF EXISTS `{st.db}_lost`", db=False)
        except Exception as e:
            log(f"cleanup: {e}")


if __name__ == "__main__":
    sys.exit(main())
