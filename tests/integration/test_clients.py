#!/usr/bin/python3
# SPDX-License-Identifier: Apache-2.0
"""Integration: the client examples of other languages (examples/python,
examples/java, examples/node) schedule, cancel and ask status against a
real forwarder, by the wire format and the client side of the fate
protocol (docs/fate-protocol.md, "Clients") alone.

One forwarder (tiers 1s,4s) serves every language at once; each language's
fate program runs as a MySQL user holding exactly `kdelayctl db grants
--role client`, with its password in KDELAY_MYSQL_PASSWORD. Per language:

- task A, scheduled by the language's schedule program, arrives once, never
  early, within 2 s of its fire-at, with key, value and header intact; a
  cancel after it fired answers too_late (exit 3);
- task B, scheduled and cancelled at once, answers cancelled (exit 0), and
  a second cancel cancelled again; B never arrives; an id no forwarder has
  seen is cancelled too;
- the race: 20 tasks due 30 ms apart, cancelled one after another from
  100 ms before the first is due, between the forwarder's claims of the
  first and the second batch of them (claims run up to
  forwarder.claim_ahead, 500 ms, before the fire: the claim is what a
  cancel races): every "cancelled" never arrives, every "too_late"
  arrives, none is "unknown", and both answers occur;
- status of A, B, the unseen id and two race tasks equals `kdelayctl
  status --json`;
- once every language's A has fired, a journal is marked pending in
  kdelay_reconcile directly in SQL (as a forwarder marks its journal after
  a fate-store outage it fired through): a cancel of an id no forwarder
  has seen answers unknown (exit 1) and records no row, a cancel of A
  still answers too_late (exit 3); `kdelayctl cancel` (the C library)
  answers UNKNOWN (exit 1; in batch mode and with --json) and `kdelayctl
  status --json` carries "reconciling"; once the mark is cleared the same
  ids cancel (exit 0). The mark is cleared whatever happens.
- the forwarder records deliveries as runs (forwarder.fate_marks=runs,
  docs/fate-protocol.md "Runs of delivered claims"): once every language
  is done, each language's status of its A and of its too_late race tasks
  answers FIRED, and of those at least one row is, read raw, FIRING with a
  kdelay_fired_run row covering its owner's seq (the run path, not a
  per-task FIRED mark).

Beside them, retries (kdelay_retry, examples/c/retrying_consumer.c, in one
Kafka transaction per batch with the consumed offsets; the forwarder runs
exactly_once): of 1,000 records 100 fail 1 to 4 times (the policy retries
3); the consumer is killed (SIGKILL) once mid-way and started again. Every
record that fails at most 3 times is processed exactly once, at the
attempt it asked for, each retry due no sooner than its backoff (200 ms
doubling, less 20 % jitter) after its failure and delivered no sooner than
due; every record failing 4 times is in the dead-letter topic once, with
its 4 failures, its original topic, partition and offset, key, value and
header; none of them is processed. And the header protocol across
languages: one record fails three times, retried in turn by
examples/python/retry.py, Java's Retry and retry.py again (max_attempts
2): attempts 1 and 2 are scheduled under the ids the protocol derives,
each read back from the topic the forwarder fired it to, and the third
failure is dead-lettered once with the three failures and their reasons,
the original coordinates, key, value and header, and no kdelay-id.

And a target rate limit (forwarder.target_rate_limits <prefix>.limited=500):
2,000 tasks due at one millisecond all arrive once, none early, in due
order, over no less than the limit needs and with no second holding more
than 500 plus the burst (50); the forwarder's /metrics counts the wait and
`kdelayctl stats` shows the target's lateness.

Environment (CMake sets it): KDELAY_CTL, KDELAY_FORWARDER, KDELAY_SOURCE_DIR,
KDELAY_RETRYING_CONSUMER,
KDELAY_EXAMPLE_PYTHON, KDELAY_JAVA and KDELAY_EXAMPLE_JAVA_DIR; the stack's
KDELAY_BROKERS, KDELAY_MYSQL_URL and KDELAY_KAFKA_CONFIG. A language that
cannot run here fails the test and says why."""
import json
import os
import re
import urllib.request
import secrets
import signal
import subprocess
import sys
import tempfile
import threading
import time
import urllib.parse

import it_kafka  # noqa: E402  (beside this file)
from confluent_kafka import Consumer, Producer
from confluent_kafka.admin import AdminClient, NewTopic

SRC = os.environ.get("KDELAY_SOURCE_DIR", os.path.join(os.path.dirname(__file__), "..", ".."))
sys.path.insert(0, os.path.join(SRC, "examples", "python"))
import fate as pyfate  # noqa: E402  (the example under test, as a module)
import schedule as pysched  # noqa: E402

TIERS = "1s,4s"
RACE_N = 20
RACE_STEP_MS = 30
# The decisive instant of a cancel is the claim. A task joins the claim
# queue forwarder.claim_ahead (500 ms) before its fire, and a batch goes to
# MySQL at most half of that later: the first 9 race tasks are claimed
# together about 250 ms before the first is due, the next 9 about 270 ms
# later. The cancels start between the two, 100 ms before the first due.
CLAIM_AHEAD_MS = 500
RACE_CANCEL_BEFORE_MS = 100
ON_TIME_MS = 2000
# The rate limit: 2,000 tasks due at one millisecond to a target limited to
# 500 fires a second (burst a tenth of that) spread over about 4 s.
LIMIT_N = 2000
LIMIT_RATE = 500
LIMIT_BURST = LIMIT_RATE // 10
# The retry header protocol's programs (examples/python/retry.py, Java's
# Retry), by language: a chain of three failures is retried by them in
# turn, python -> java -> python, each on the record the last one's retry
# fired.
RETRY_PROGRAMS = {}


def now_ms():
    return time.time_ns() // 1_000_000


def fail(msg):
    print(f"test_clients: FAIL: {msg}", file=sys.stderr)
    sys.exit(1)


def log(msg):
    print(f"test_clients: {msg}", file=sys.stderr, flush=True)


def kafka_conf():
    try:
        return it_kafka.kafka_conf()
    except RuntimeError as e:
        fail(str(e))


def url_with(url, user=None, db=None):
    """url with its user (and no password) or its database replaced."""
    u = urllib.parse.urlsplit(url)
    netloc = u.netloc
    if user is not None:
        host = netloc.rpartition("@")[2]
        netloc = f"{urllib.parse.quote(user, safe='')}@{host}"
    path = f"/{db}" if db is not None else u.path
    return urllib.parse.urlunsplit((u.scheme, netloc, path, u.query, ""))


def languages():
    """name -> (schedule argv prefix, fate argv prefix), or a reason."""
    py = os.environ.get("KDELAY_EXAMPLE_PYTHON", "/usr/bin/python3")
    langs, missing = {}, []
    langs["python"] = ([py, os.path.join(SRC, "examples/python/schedule.py")],
                       [py, os.path.join(SRC, "examples/python/fate.py")])
    RETRY_PROGRAMS["python"] = [py, os.path.join(SRC, "examples/python/retry.py")]
    java = os.environ.get("KDELAY_JAVA", "")
    jdir = os.environ.get("KDELAY_EXAMPLE_JAVA_DIR", "")
    cpfile = os.path.join(jdir, "classpath.txt")
    if java and os.path.isfile(cpfile):
        with open(cpfile, encoding="utf-8") as f:
            cp = os.path.join(jdir, "classes") + ":" + f.read().strip()
        langs["java"] = ([java, "-cp", cp, "Schedule"], [java, "-cp", cp, "Fate"])
        RETRY_PROGRAMS["java"] = [java, "-cp", cp, "Retry"]
    else:
        missing.append(f"java: no built example in {jdir!r} (Maven missing at configure time?)")
    node = os.path.join(SRC, "examples/node/run.sh")
    langs["node"] = ([node, "schedule"], [node, "fate"])
    return langs, missing


class Stack:
    """A database, a client user, topics and one forwarder of this test."""

    def __init__(self):
        self.tag = secrets.token_hex(4)
        self.prefix = f"itcli{self.tag}"
        self.db = f"kdit_cli_{self.tag}"
        self.user = f"kdcli_{self.tag}"
        self.password = secrets.token_urlsafe(18)
        self.root_url = os.environ.get("KDELAY_MYSQL_URL")
        if not self.root_url:
            fail("KDELAY_MYSQL_URL is not set")
        self.url = url_with(self.root_url, db=self.db)
        self.client_url = url_with(self.url, user=self.user)
        self.ctl = os.environ["KDELAY_CTL"]
        self.fwd = None
        self.tmp = tempfile.mkdtemp(prefix="test_clients.")
        self.kconf = kafka_conf()
        self.target = f"{self.prefix}.target"
        self.http_port = None

    def root_sql(self, *statements):
        """Runs statements as the stack's user; the last one's rows."""
        import pymysql

        kw = pyfate.parse_url(self.root_url)
        kw.pop("database")
        if "password" not in kw and os.environ.get("MYSQL_PWD"):
            kw["password"] = os.environ["MYSQL_PWD"]
        conn = pymysql.connect(autocommit=True, **kw)
        try:
            with conn.cursor() as cur:
                for s in statements:
                    cur.execute(s)
                return cur.fetchall()
        finally:
            conn.close()

    def kdelayctl(self, *args, url=None, check=True, input=None):
        argv = [self.ctl, "--brokers", self.kconf["bootstrap.servers"],
                "--mysql", url or self.url, "-X", f"topic_prefix={self.prefix}",
                "-X", f"tiers={TIERS}", "-X", f"forwarder.group_id={self.prefix}-group",
                "-X", f"forwarder.target_rate_limits={self.prefix}.limited={LIMIT_RATE}"]
        if os.environ.get("KDELAY_KAFKA_CONFIG"):
            argv += ["--kafka-config", os.environ["KDELAY_KAFKA_CONFIG"]]
        r = subprocess.run(argv + list(args), capture_output=True, text=True, timeout=120,
                           input=input)
        if check and r.returncode != 0:
            fail(f"kdelayctl {' '.join(args)}: exit {r.returncode}: {r.stderr.strip()}")
        return r

    def up(self):
        self.root_sql(f"CREATE DATABASE `{self.db}`")
        self.kdelayctl("db", "migrate")
        grants = self.kdelayctl("db", "grants", "--role", "client", "--user", f"{self.user}@%").stdout
        grants = [l.rstrip(";") for l in grants.splitlines() if l.startswith("GRANT ")]
        if not any("`kdelay_reconcile`" in l for l in grants):
            # From schema 9 a cancel reads kdelay_reconcile (docs/fate-protocol.md,
            # "While a reconciliation is pending").
            fail("`kdelayctl db grants --role client` lacks SELECT on kdelay_reconcile")
        self.root_sql(f"CREATE USER '{self.user}'@'%' IDENTIFIED BY '{self.password}'", *grants)
        self.kdelayctl("topics", "create", "--partitions", "2")
        admin = AdminClient(self.kconf)
        admin.create_topics([NewTopic(self.target, 2, 1)])[self.target].result(30)
        argv = [os.environ["KDELAY_FORWARDER"], "--brokers", self.kconf["bootstrap.servers"],
                "--mysql", self.url, "-X", f"topic_prefix={self.prefix}",
                "-X", f"forwarder.group_id={self.prefix}-group",
                "-X", "forwarder.instance=fwClients", "-X", f"tiers={TIERS}",
                "-X", "forwarder.hold_horizon=2s",
                "-X", f"forwarder.claim_ahead={CLAIM_AHEAD_MS}ms",
                "-X", "forwarder.delivery=exactly_once",
                "-X", "forwarder.fate_marks=runs",
                "-X", f"forwarder.target_rate_limits={self.prefix}.limited={LIMIT_RATE}",
                "-X", "forwarder.http_listen=127.0.0.1:0"]
        if os.environ.get("KDELAY_KAFKA_CONFIG"):
            argv += ["--kafka-config", os.environ["KDELAY_KAFKA_CONFIG"]]
        self.fwd_log = os.path.join(self.tmp, "forwarder.log")
        self.fwd = subprocess.Popen(argv, stdout=subprocess.DEVNULL,
                                    stderr=open(self.fwd_log, "w"))
        deadline = time.time() + 30
        while time.time() < deadline:
            with open(self.fwd_log, encoding="utf-8", errors="replace") as f:
                text = f.read()
            if "event=partitions_assigned" in text:
                m = re.search(r"event=http_listening .*?port=(\d+)", text)
                self.http_port = int(m.group(1)) if m else None
                return
            if self.fwd.poll() is not None:
                break
            time.sleep(0.1)
        fail(f"the forwarder did not get its partitions in 30 s: {self.fwd_log}")

    def down(self):
        if self.fwd and self.fwd.poll() is None:
            self.fwd.send_signal(signal.SIGTERM)
            try:
                self.fwd.wait(30)
            except subprocess.TimeoutExpired:
                self.fwd.kill()
        try:
            self.root_sql(f"DROP USER IF EXISTS '{self.user}'@'%'", f"DROP DATABASE IF EXISTS `{self.db}`")
        except Exception as e:  # the run's verdict stands; say what was left
            log(f"cleanup: {e}")
        AdminClient(self.kconf).delete_topics(
            [self.target, f"{self.prefix}.dead"] + [f"{self.prefix}.tier.{t}" for t in TIERS.split(",")]
            + [f"{self.prefix}.retry-{k}" for k in ("in", "out", "dead")]
            + [f"{self.prefix}.chain-{k}" for k in ("in", "dead")] + [f"{self.prefix}.limited"])


class Lang:
    """One language's run: its commands, answers and failures."""

    def __init__(self, name, sched, fate, stack):
        self.name, self.sched, self.fate, self.stack = name, sched, fate, stack
        self.errors = []
        self.ids = {}  # role -> id
        self.fire_at = {}  # id -> due ms
        self.written_at = {}  # id -> when its schedule call returned
        self.race = []  # (id, due ms)
        self.race_answers = {}  # id -> outcome
        self.expect_arrive, self.expect_never = set(), set()
        self.statuses = {}  # id -> the example's status object
        self.env = dict(os.environ, KDELAY_MYSQL_URL=stack.client_url,
                        KDELAY_MYSQL_PASSWORD=stack.password)

    def err(self, msg):
        self.errors.append(msg)

    def run(self, argv, timeout=60):
        r = subprocess.run(argv, capture_output=True, text=True, timeout=timeout, env=self.env)
        if stack_password_in(r, self.stack.password):
            self.err(f"{argv[-2:]}: the password appears in the output")
        return r

    def schedule(self, role, due, key, value, header):
        argv = self.sched + ["--brokers", self.stack.kconf["bootstrap.servers"],
                             "--prefix", self.stack.prefix, "--tiers", TIERS,
                             "--topic", self.stack.target, "--key", key, "--value", value,
                             "--at", str(due), "--header", header]
        r = self.run(argv)
        if r.returncode != 0 or not r.stdout.strip():
            self.err(f"schedule {role}: exit {r.returncode}: {r.stderr.strip()[-400:]}")
            return None
        tid = r.stdout.strip().splitlines()[-1]
        self.ids[role], self.fire_at[tid] = tid, due
        self.written_at[tid] = now_ms()  # the program returned: it is in Kafka
        return tid

    def fate_cmd(self, verb, ids, not_before=None, want_rc=None):
        argv = list(self.fate)
        if not_before is not None:
            argv += ["--not-before", str(not_before)]
        r = self.run(argv + [verb] + list(ids))
        try:
            out = [json.loads(l) for l in r.stdout.splitlines() if l.strip()]
        except ValueError:
            self.err(f"{verb}: stdout is not JSON lines: {r.stdout[:300]!r}")
            return None
        if len(out) != len(ids) or [o.get("id") for o in out] != list(ids):
            self.err(f"{verb} {ids[:2]}...: {len(out)} answers for {len(ids)} ids: "
                     f"{r.stdout[:300]!r} {r.stderr.strip()[-300:]}")
            return None
        if want_rc is not None and r.returncode != want_rc:
            self.err(f"{verb} {list(ids)[:2]}: exit {r.returncode}, want {want_rc}: {r.stderr.strip()[-300:]}")
        return out, r.returncode

    def check_status(self, ids):
        got = self.fate_cmd("status", ids, want_rc=0)
        if not got:
            return
        for o in got[0]:
            ref = self.stack.kdelayctl("status", "--json", o["id"]).stdout
            if json.loads(ref) != o:
                self.err(f"status {o['id']!r}: {json.dumps(o)} but kdelayctl says {ref.strip()}")
            self.statuses[o["id"]] = o


def stack_password_in(r, password):
    return password in (r.stdout or "") or password in (r.stderr or "")


def race_tasks(stack, lang, t_race):
    """Produces RACE_N tasks due RACE_STEP_MS apart (the python example's
    schedule() as a module, on one producer)."""
    producer = Producer({**stack.kconf, "enable.idempotence": True, "acks": "all",
                         "partitioner": "murmur2_random"})
    errors = []
    tiers = pysched.parse_tiers(TIERS)
    for i in range(RACE_N):
        due = t_race + i * RACE_STEP_MS
        tid = pysched.schedule(producer, stack.prefix, tiers, stack.target,
                               f"race-{lang.name}", f"race {i}", due,
                               task_id=f"race-{stack.tag}-{lang.name}-{i:02d}",
                               on_delivery=lambda err, _m: err and errors.append(err))
        lang.race.append((tid, due))
        lang.fire_at[tid] = due
    if producer.flush(30) or errors:
        lang.err(f"race tasks not produced: {errors}")


def lang_main(lang):
    """Every due time counts from when its step runs, not from the run's
    start: a JVM starts in seconds on a loaded machine."""
    s = lang.stack
    try:
        # A: due in 6 s, arrives intact and on time.
        a_due = now_ms() + 6000
        a = lang.schedule("A", a_due, f"key-{lang.name}", f"value of {lang.name} ✓",
                          f"trace={lang.name}-7")
        # B: due 15 s after it is scheduled, cancelled at once: cancelled
        # twice, never arrives. (8 s was once too short for a JVM to start
        # and cancel it on a loaded 2-core machine: too_late.) The run
        # watches until 3 s after it is due.
        b_due = now_ms() + 15000
        b = lang.schedule("B", b_due, f"key-{lang.name}-b", "never", "trace=b")
        unseen = f"unseen-{s.tag}-{lang.name}"
        if b:
            got = lang.fate_cmd("cancel", [b, b, unseen], want_rc=0)
            if got and [o["outcome"] for o in got[0]] != ["cancelled"] * 3:
                lang.err(f"cancel B twice and an unseen id: {got[0]}")
            lang.expect_never |= {b, unseen}
        if a:
            lang.expect_arrive.add(a)
        # The race's tasks are due 6 s on: time for the fate program to
        # start and connect before its --not-before.
        t_race = now_ms() + 6000
        race_tasks(s, lang, t_race)
        # The race: one process, connected ahead, cancels every race task in
        # order from 100 ms before the first is due.
        got = lang.fate_cmd("cancel", [t for t, _ in lang.race],
                            not_before=t_race - RACE_CANCEL_BEFORE_MS)
        if got:
            out, rc = got
            for o in out:
                lang.race_answers[o["id"]] = o["outcome"]
            kinds = {o["outcome"] for o in out}
            if "unknown" in kinds:
                lang.err(f"race: unknown outcomes: {[o for o in out if o['outcome'] == 'unknown'][:3]}")
            if kinds != {"cancelled", "too_late"}:
                lang.err(f"race: want both cancelled and too_late, got {sorted(kinds)}")
            want = 3 if "too_late" in kinds and "unknown" not in kinds else 0 if kinds == {"cancelled"} else rc
            if rc != want:
                lang.err(f"race: exit {rc}, want {want}")
            for tid, _ in lang.race:
                if lang.race_answers.get(tid) == "cancelled":
                    lang.expect_never.add(tid)
                elif lang.race_answers.get(tid) == "too_late":
                    lang.expect_arrive.add(tid)
        # After A fired: too late.
        if a:
            time.sleep(max(0, a_due + 3000 - now_ms()) / 1000)
            got = lang.fate_cmd("cancel", [a], want_rc=3)
            if got and got[0][0]["outcome"] != "too_late":
                lang.err(f"cancel of fired A: {got[0][0]}")
        time.sleep(max(0, max(t_race + RACE_N * RACE_STEP_MS, b_due) + 3000
                       - now_ms()) / 1000)
        ids = [i for i in (a, b, unseen) if i] + [lang.race[0][0], lang.race[-1][0]]
        lang.check_status(ids)
    except Exception as e:  # a crash of the harness is a failure too
        lang.err(f"{type(e).__name__}: {e}")


def raw_covered(stack, ids):
    """id -> (state, owner, covered) of the rows of ids read raw: covered
    when a kdelay_fired_run row's [seq_lo, seq_hi] holds the owner's seq
    under its prefix (the greatest seq_lo at or below it decides)."""
    quoted = ", ".join("'" + i.replace("'", "''") + "'" for i in ids)
    rows = stack.root_sql(f"SELECT task_id, state, owner FROM `{stack.db}`.kdelay_fate "
                          f"WHERE task_id IN ({quoted})")
    out = {}
    for tid, state, owner in rows:
        tid = tid.decode() if isinstance(tid, bytes) else tid
        owner = owner.decode() if isinstance(owner, bytes) else owner
        covered = False
        prefix, _, seq = (owner or "").rpartition(":")
        if prefix.count(":") == 1 and seq.isdigit():
            hit = stack.root_sql(
                f"SELECT seq_hi FROM `{stack.db}`.kdelay_fired_run WHERE owner_prefix = "
                f"X'{prefix.encode().hex()}' AND seq_lo <= {int(seq)} "
                "ORDER BY seq_lo DESC LIMIT 1")
            covered = bool(hit) and int(hit[0][0]) >= int(seq)
        out[tid] = (state, owner, covered)
    return out


def runs_check(stack, lang):
    """Every fired task of lang (A, the too_late race tasks) reads FIRED
    by its status, and at least one of them is a FIRING row a run covers:
    read FIRED through the covered test."""
    try:
        ids = [i for i in [lang.ids.get("A")] if i]
        ids += [t for t, _ in lang.race if lang.race_answers.get(t) == "too_late"]
        if not ids:
            lang.err("runs: no fired task to ask")
            return
        got = lang.fate_cmd("status", ids, want_rc=0)
        if not got:
            return
        raw = raw_covered(stack, ids)
        covered = [o["id"] for o in got[0] if raw.get(o["id"], (None, None, False))[2]]
        for o in got[0]:
            if o["fate"] != "FIRED":
                lang.err(f"runs: status of fired {o['id']!r}: {o['fate']}, raw row "
                         f"{raw.get(o['id'])}")
            r = raw.get(o["id"])
            if r and r[2] and r[0] != "FIRING":
                lang.err(f"runs: {o['id']!r} covered yet raw state {r[0]}")
        if not covered:
            lang.err(f"runs: none of {len(ids)} fired tasks is a FIRING row a run covers: {raw}")
        lang.runs = f"{len(ids)} fired read FIRED, {len(covered)} of them FIRING rows covered by a run"
    except Exception as e:  # a crash of the harness is a failure too
        lang.err(f"runs: {type(e).__name__}: {e}")


RECONCILE_JOURNAL = "test.journal"
RECONCILING_TEXT = "reconciliation after a fate-store outage is pending"


def reconcile_cancel(lang, step, task_id, want):
    """One cancel of the reconciliation window: want (outcome, fate, exit),
    noted in lang.reconcile[step]."""
    try:
        got = lang.fate_cmd("cancel", [task_id], want_rc=want[2])
        if not got:
            return
        o, rc = got[0][0], got[1]
        lang.reconcile[step] = f"{o.get('outcome')} (exit {rc})"
        if (o.get("outcome"), o.get("fate")) != want[:2] \
                or want[0] == "unknown" and RECONCILING_TEXT not in o.get("error", ""):
            lang.err(f"reconciliation window, {step}: cancel {task_id!r}: {o}")
    except Exception as e:  # a crash of the harness is a failure too
        lang.err(f"reconciliation window, {step}: {type(e).__name__}: {e}")


def each_lang(runs, steps):
    """Runs (lang, step, id, want) cancels, one thread per language."""
    def run(lang, mine):
        for step in mine:
            reconcile_cancel(lang, *step)
    threads = [threading.Thread(target=run, args=(l, [st[1:] for st in steps if st[0] is l]))
               for l in runs]
    for t in threads:
        t.start()
    return threads


def reconcile_window(stack, runs, c):
    """While a journal is pending, every language's cancel of an id no
    forwarder has seen answers unknown and records nothing, a cancel of
    the fired A too_late, and kdelayctl (the C library) answers UNKNOWN,
    its status noting the reconciliation; once cleared, the ids cancel.
    Runs once every language's timed steps are done (no race cancel or
    status check meets the mark), the languages at once; the mark is
    cleared whatever happens."""
    table = f"`{stack.db}`.kdelay_reconcile"
    ids = {l.name: f"unseen-rec-{stack.tag}-{l.name}" for l in runs}
    c_id = f"unseen-rec-{stack.tag}-c"
    for l in runs:
        l.reconcile = {"pending": "-", "A": "-", "cleared": "-"}
    t0 = now_ms()
    threads = []
    try:
        stack.root_sql(f"INSERT INTO {table} (journal, epoch, pending_since_ms, marked_at_ms, "
                       f"marked_by) VALUES ('{RECONCILE_JOURNAL}', 1, {t0}, {t0}, 'test')")
        steps = [(l, "pending", ids[l.name], ("unknown", None, 1)) for l in runs]
        steps += [(l, "A", l.ids["A"], ("too_late", "FIRED", 3)) for l in runs if l.ids.get("A")]
        threads = each_lang(runs, steps)
        # The C library's cancel, in batch mode and with --json, and status.
        r = stack.kdelayctl("cancel", "-", input=c_id + "\n", check=False)
        if r.returncode != 1 or not r.stdout.startswith(f"{c_id} UNKNOWN "):
            c.err(f"kdelayctl cancel - while pending: exit {r.returncode}: {r.stdout.strip()!r}")
        r = stack.kdelayctl("cancel", "--json", c_id, check=False)
        try:
            res = json.loads(r.stdout).get("result")
        except ValueError:
            res = None
        if r.returncode != 1 or res != "UNKNOWN":
            c.err(f"kdelayctl cancel --json while pending: exit {r.returncode}: {r.stdout.strip()!r}")
        r = stack.kdelayctl("status", "--json", c_id, check=False)
        try:
            rec = json.loads(r.stdout).get("reconciling") or {}
        except ValueError:
            rec = {}
        if r.returncode != 0 or (rec.get("journal"), rec.get("since_ms"), rec.get("marked_by")) \
                != (RECONCILE_JOURNAL, t0, "test"):
            c.err(f"kdelayctl status --json while pending: exit {r.returncode}: {r.stdout.strip()!r}")
        c.figures = f"kdelayctl cancel UNKNOWN (exit 1), status --json \"reconciling\": {json.dumps(rec)}"
        for t in threads:
            t.join(120)
        # Nothing was recorded for the ids the window's cancels met.
        quoted = ", ".join(f"'{i}'" for i in list(ids.values()) + [c_id])
        rows = stack.root_sql(f"SELECT task_id, state FROM `{stack.db}`.kdelay_fate "
                              f"WHERE task_id IN ({quoted})")
        if rows:
            c.err(f"rows recorded while a reconciliation was pending: {rows}")
    except Exception as e:  # a crash of the harness is a failure too
        c.err(f"{type(e).__name__}: {e}")
    finally:
        for t in threads:
            t.join(120)
        try:
            stack.root_sql(f"UPDATE {table} SET pending_since_ms = NULL")
        except Exception as e:
            c.err(f"the mark was not cleared: {e}")
    # Cleared: the same ids cancel.
    threads = each_lang(runs, [(l, "cleared", ids[l.name], ("cancelled", None, 0)) for l in runs])
    try:
        r = stack.kdelayctl("cancel", c_id, check=False)
        if r.returncode != 0:
            c.err(f"kdelayctl cancel once cleared: exit {r.returncode}: {r.stderr.strip()[-300:]}")
        c.figures += f"; once cleared exit {r.returncode}; the window took {now_ms() - t0} ms"
    except Exception as e:  # a crash of the harness is a failure too
        c.err(f"{type(e).__name__}: {e}")
    for t in threads:
        t.join(120)


def consume(stack, until, arrived):
    """Reads the target until until["ms"] (set once the languages are
    done) has passed."""
    c = Consumer({**stack.kconf, "group.id": f"{stack.prefix}-check",
                  "auto.offset.reset": "earliest", "enable.auto.commit": False,
                  "isolation.level": "read_committed"})
    c.subscribe([stack.target])
    while now_ms() < until["ms"]:
        m = c.poll(0.2)
        if m is None or m.error():
            continue
        hdrs = {k: v for k, v in (m.headers() or [])}
        tid = (hdrs.get("kdelay-id") or b"").decode("utf-8", "replace")
        arrived.setdefault(tid, []).append({
            "ts": m.timestamp()[1], "key": m.key(), "value": m.value(), "headers": hdrs})
    c.close()


def check_arrivals(lang, arrived):
    for tid in sorted(lang.expect_never):
        if tid in arrived:
            what = "cancelled" if tid in lang.race_answers else "cancelled (B or unseen)"
            lang.err(f"{tid!r} was {what} yet arrived")
    for tid in sorted(lang.expect_arrive):
        recs = arrived.get(tid, [])
        if not recs:
            lang.err(f"{tid!r} never arrived")
            continue
        if len(recs) != 1:
            lang.err(f"{tid!r} arrived {len(recs)} times")
        r, due = recs[0], lang.fire_at[tid]
        if r["ts"] < due:
            lang.err(f"{tid!r} early by {due - r['ts']} ms")
        elif (tid == lang.ids.get("A")
              and r["ts"] > max(due, lang.written_at.get(tid, due)) + ON_TIME_MS):
            # From its fire-at, or from its write when that came after it
            # (a JVM slow on a loaded host returned its schedule call
            # 2.4 s after A was due, in a CI run): what the forwarder added.
            lang.err(f"{tid!r} late by {r['ts'] - due} ms (its schedule call returned "
                     f"{due - lang.written_at.get(tid, due)} ms before it was due)")
        if tid == lang.ids.get("A"):
            want = (f"key-{lang.name}".encode(), f"value of {lang.name} ✓".encode(),
                    f"{lang.name}-7".encode())
            got = (r["key"], r["value"], r["headers"].get("trace"))
            if got != want:
                lang.err(f"A arrived as {got}, want {want}")
            lang.a_late = r["ts"] - due


RETRY_N = 1000
RETRY_MAX = 3  # the example's policy.max_attempts
RETRY_BACKOFF_MS = 200  # its backoff_initial_ms, doubling
RETRY_JITTER = 0.2


def retry_failures(i):
    """How often record i fails: 1..4 for every tenth, else never."""
    return 1 + (i // 10) % 4 if i % 10 == 0 else 0


class Retry:
    """The retrying consumer's run, checked like a language's."""

    def __init__(self, stack):
        self.stack, self.errors, self.name = stack, [], "retry"
        self.topics = {k: f"{stack.prefix}.retry-{k}" for k in ("in", "out", "dead")}
        self.coords = {}  # i -> (partition, offset) of the input record
        self.kills = 0
        self.figures = ""

    def err(self, msg):
        self.errors.append(msg)

    def consumer(self, log):
        argv = [os.environ["KDELAY_RETRYING_CONSUMER"], self.stack.kconf["bootstrap.servers"],
                f"{self.stack.prefix}-retrying", self.topics["in"], self.topics["out"],
                self.topics["dead"], self.stack.prefix, TIERS]
        return subprocess.Popen(argv, stdout=subprocess.DEVNULL, stderr=log)

    def produce(self):
        p = Producer({**self.stack.kconf, "enable.idempotence": True, "acks": "all"})
        def report(err, m):
            if err:
                self.err(f"input not produced: {err}")
            else:
                self.coords[int(m.key())] = (m.partition(), m.offset())
        for i in range(RETRY_N):
            n = retry_failures(i)
            p.produce(self.topics["in"], key=str(i).encode(),
                      value=f"record {i}" .encode() + (f"#fail={n}".encode() if n else b""),
                      headers=[("trace", f"t{i}".encode())], on_delivery=report)
        if p.flush(30):
            self.err("input not flushed in 30 s")

    def read(self, topic, want, deadline_ms):
        c = Consumer({**self.stack.kconf, "group.id": f"{self.stack.prefix}-check-{topic}",
                      "auto.offset.reset": "earliest", "enable.auto.commit": False,
                      "isolation.level": "read_committed"})
        c.subscribe([topic])
        recs = []
        quiet_until = None
        while now_ms() < deadline_ms:
            m = c.poll(0.2)
            if m is not None and not m.error():
                recs.append(m)
                continue
            # Once all are in, read 2 s more for duplicates.
            if len(recs) >= want:
                quiet_until = quiet_until or now_ms() + 2000
                if now_ms() >= quiet_until:
                    break
        c.close()
        return recs


def header_map(m):
    return {k: (v or b"").decode("utf-8", "replace") for k, v in (m.headers() or [])}


def failures_of(h):
    out = []
    for line in h.get("kdelay-failures", "").split("\n"):
        f = dict(kv.split("=", 1) for kv in line.split(" ")[:2]) if line else {}
        if f:
            out.append((int(f["attempt"]), int(f["failed_at"])))
    return out


def retry_main(r):
    try:
        admin = AdminClient(r.stack.kconf)
        fs = admin.create_topics([NewTopic(t, 2, 1) for t in r.topics.values()])
        for f in fs.values():
            f.result(30)
        r.produce()
        log = open(os.path.join(r.stack.tmp, "retrying_consumer.log"), "w+")
        proc = r.consumer(log)
        # Killed once some retries are committed (its second committed
        # batch), then started again.
        deadline = time.time() + 60
        while time.time() < deadline:
            log.flush()
            with open(log.name, encoding="utf-8", errors="replace") as f:
                text = f.read()
            if text.count("committed records=") >= 2 or proc.poll() is not None:
                break
            time.sleep(0.05)
        if proc.poll() is not None:
            r.err(f"the consumer exited {proc.returncode} before the kill: {text[-500:]}")
            return
        proc.kill()
        proc.wait()
        r.kills += 1
        r.first_run = text.count("committed records=")
        proc = r.consumer(log)
        want = sum(1 for i in range(RETRY_N) if retry_failures(i) <= RETRY_MAX)
        dead_want = RETRY_N - want
        out = r.read(r.topics["out"], want, now_ms() + 60000)
        dead = r.read(r.topics["dead"], dead_want, now_ms() + 10000)
        proc.send_signal(signal.SIGTERM)
        try:
            if proc.wait(30) != 0:
                r.err(f"the restarted consumer exited {proc.returncode}")
        except subprocess.TimeoutExpired:
            proc.kill()
            r.err("the restarted consumer did not stop on SIGTERM")
        seen = {}
        margin_min = None
        for m in out:
            i = int(m.key())
            seen[i] = seen.get(i, 0) + 1
            h = header_map(m)
            n = retry_failures(i)
            if n > RETRY_MAX:
                r.err(f"record {i} (fails {n} times) was processed")
                continue
            attempt = int(h.get("kdelay-attempt", "0"))
            if attempt != n:
                r.err(f"record {i} processed at attempt {attempt}, want {n}")
                continue
            if h.get("trace") != f"t{i}":
                r.err(f"record {i}: header trace {h.get('trace')!r}")
            if n:
                fails = failures_of(h)
                if [a for a, _ in fails] != list(range(1, n + 1)):
                    r.err(f"record {i}: failures {fails}")
                    continue
                fire_at = int(h["kdelay-fire-at"])
                lower = (1 - RETRY_JITTER) * RETRY_BACKOFF_MS * 2 ** (n - 1)
                early = fire_at - fails[-1][1] - lower
                margin_min = early if margin_min is None else min(margin_min, early)
                if early < 0:
                    r.err(f"record {i}: retry {n} due {fire_at - fails[-1][1]} ms after "
                          f"its failure, the backoff allows no less than {lower:.0f}")
                want_id = "retry:%s:%d:%d:%d" % ((r.topics["in"],) + r.coords.get(i, (-1, -1)) + (n,))
                if h.get("kdelay-id") != want_id:
                    r.err(f"record {i}: retried as {h.get('kdelay-id')!r}, want {want_id!r}")
                if m.timestamp()[1] < fire_at:
                    r.err(f"record {i}: processed at {m.timestamp()[1]}, before its retry was due {fire_at}")
                if h.get("kdelay-original-topic") != r.topics["in"] or \
                        (int(h.get("kdelay-original-partition", -1)),
                         int(h.get("kdelay-original-offset", -1))) != r.coords.get(i):
                    r.err(f"record {i}: original {h.get('kdelay-original-topic')}/"
                          f"{h.get('kdelay-original-partition')}/{h.get('kdelay-original-offset')}")
        lost = [i for i in range(RETRY_N) if retry_failures(i) <= RETRY_MAX and i not in seen]
        dups = [i for i, c in seen.items() if c > 1]
        if lost:
            r.err(f"{len(lost)} records never processed, e.g. {lost[:5]}")
        if dups:
            r.err(f"{len(dups)} records processed more than once, e.g. {dups[:5]}")
        dead_seen = {}
        for m in dead:
            i = int(m.key())
            dead_seen[i] = dead_seen.get(i, 0) + 1
            h = header_map(m)
            fails = failures_of(h)
            if retry_failures(i) <= RETRY_MAX:
                r.err(f"record {i} (fails {retry_failures(i)} times) was dead-lettered")
            elif [a for a, _ in fails] != [1, 2, 3, 4] or h.get("kdelay-attempt") != "4" \
                    or h.get("kdelay-dead-reason") != "retries-exhausted" \
                    or h.get("trace") != f"t{i}" or m.value() != f"record {i}#fail=4".encode() \
                    or (int(h.get("kdelay-original-partition", -1)),
                        int(h.get("kdelay-original-offset", -1))) != r.coords.get(i):
                r.err(f"dead letter {i}: {h} value {m.value()!r}")
        if sorted(dead_seen) != [i for i in range(RETRY_N) if retry_failures(i) > RETRY_MAX] \
                or any(c != 1 for c in dead_seen.values()):
            r.err(f"dead letters: {len(dead_seen)} records, counts {sorted(set(dead_seen.values()))}")
        retried = sum(1 for i in seen if retry_failures(i))
        r.figures = (f"records {RETRY_N}, processed {len(seen)} (of them after retries {retried}), "
                     f"dead-lettered {len(dead_seen)}, lost {len(lost)}, duplicates {len(dups)}, "
                     f"consumer killed {r.kills}x after {r.first_run} committed batches; "
                     f"smallest margin over the backoff {margin_min} ms")
    except Exception as e:  # a crash of the harness is a failure too
        r.err(f"{type(e).__name__}: {e}")



def chain_main(c):
    """One record fails three times, each failure retried by another
    language's program (max_attempts 2): attempts 1 and 2 are scheduled
    under the ids the protocol derives, the third failure is
    dead-lettered with the whole history."""
    s = c.stack
    try:
        order = [l for l in ("python", "java", "python") if l in RETRY_PROGRAMS]
        if len(order) < 3:
            c.err(f"retry programs missing: have {sorted(RETRY_PROGRAMS)}")
            return
        tin, tdead = f"{s.prefix}.chain-in", f"{s.prefix}.chain-dead"
        admin = AdminClient(s.kconf)
        for f in admin.create_topics([NewTopic(tin, 1, 1), NewTopic(tdead, 1, 1)]).values():
            f.result(30)
        p = Producer({**s.kconf, "enable.idempotence": True, "acks": "all"})
        p.produce(tin, key=b"chain-key", value=b"chain value \xe2\x9c\x93", headers=[("trace", b"chain-7")])
        if p.flush(30):
            c.err("the chain's record was not produced")
            return
        outs = []
        for n, lang in enumerate(order, 1):
            argv = RETRY_PROGRAMS[lang] + [
                "--brokers", s.kconf["bootstrap.servers"], "--group", f"{s.prefix}-chain",
                "--topic", tin, "--dead-topic", tdead, "--prefix", s.prefix, "--tiers", TIERS,
                "--backoff", "200ms", "--max-attempts", "2", "--count", "1", "--timeout", "20s",
                "--reason", f"failure {n} in {lang}"]
            r = subprocess.run(argv, capture_output=True, text=True, timeout=60)
            if r.returncode != 0 or not r.stdout.strip():
                c.err(f"{lang} retry {n}: exit {r.returncode}: {r.stderr.strip()[-300:]}")
                return
            o = json.loads(r.stdout.strip().splitlines()[-1])
            outs.append((lang, o))
            # Each run reads the record the last one's retry fired: a later
            # offset (an exactly_once forwarder's commit markers take
            # offsets too), the first at 0.
            last = outs[-2][1]["offset"] if n > 1 else -1
            if (o.get("offset") == 0) != (n == 1) or o.get("offset", -1) <= last \
                    or o.get("attempt") != n:
                c.err(f"{lang} retry {n}: handled {o}, want attempt {n} past offset {last}")
            want = ("scheduled", f"retry:{tin}:0:0:{n}") if n <= 2 else ("dead", None)
            if (o.get("outcome"), o.get("task_id")) != want:
                c.err(f"{lang} retry {n}: {o}, want {want}")
        dead = Consumer({**s.kconf, "group.id": f"{s.prefix}-chain-check",
                         "auto.offset.reset": "earliest", "isolation.level": "read_committed"})
        dead.subscribe([tdead])
        got, end = None, time.time() + 15
        while got is None and time.time() < end:
            m = dead.poll(0.2)
            if m is not None and not m.error():
                got = m
        dead.close()
        if got is None:
            c.err("the chain's dead letter never arrived")
            return
        h = header_map(got)
        fails = failures_of(h)
        reasons = [l.split(" reason=", 1)[1] for l in h.get("kdelay-failures", "").split("\n")]
        want_reasons = [f"failure {n} in {lang}" for n, lang in enumerate(order, 1)]
        if (got.key(), got.value(), h.get("trace")) != (b"chain-key", "chain value ✓".encode(), "chain-7") \
                or h.get("kdelay-attempt") != "3" or [a for a, _ in fails] != [1, 2, 3] \
                or reasons != want_reasons or h.get("kdelay-dead-reason") != "retries-exhausted" \
                or (h.get("kdelay-original-topic"), h.get("kdelay-original-partition"),
                    h.get("kdelay-original-offset")) != (tin, "0", "0") \
                or "kdelay-id" in h or "kdelay-fire-at" in h:
            c.err(f"the chain's dead letter: key {got.key()!r} value {got.value()!r} headers {h}")
        c.figures = (" -> ".join(f"{l} {o['outcome']} attempt {o['attempt']}" for l, o in outs)
                     + f"; dead letter with {len(fails)} failures")
    except Exception as e:  # a crash of the harness is a failure too
        c.err(f"{type(e).__name__}: {e}")



def limit_main(c, t_due):
    """LIMIT_N tasks due at t_due to a target limited to LIMIT_RATE/s: all
    arrive once, none early, in due order, no second holding more than the
    rate and its burst; /metrics and kdelayctl stats show the wait."""
    s = c.stack
    try:
        topic = f"{s.prefix}.limited"
        admin = AdminClient(s.kconf)
        admin.create_topics([NewTopic(topic, 1, 1)])[topic].result(30)
        p = Producer({**s.kconf, "enable.idempotence": True, "acks": "all",
                      "partitioner": "murmur2_random", "linger.ms": 20})
        tiers = pysched.parse_tiers(TIERS)
        for i in range(LIMIT_N):
            pysched.schedule(p, s.prefix, tiers, topic, f"k{i}", f"limited {i}", t_due,
                             task_id=f"limited-{s.tag}-{i:04d}")
            p.poll(0)
        if p.flush(30):
            c.err("the limited tasks were not produced")
            return
        cons = Consumer({**s.kconf, "group.id": f"{s.prefix}-limited-check",
                         "auto.offset.reset": "earliest", "isolation.level": "read_committed"})
        cons.subscribe([topic])
        recs = []
        deadline = t_due + 30000
        while now_ms() < deadline and len(recs) < LIMIT_N:
            m = cons.poll(0.2)
            if m is not None and not m.error():
                recs.append((m.timestamp()[1], header_map(m)))
        end = now_ms() + 2000  # duplicates after the last
        while now_ms() < end:
            m = cons.poll(0.2)
            if m is not None and not m.error():
                recs.append((m.timestamp()[1], header_map(m)))
        cons.close()
        ids = [h.get("kdelay-id") for _, h in recs]
        if len(set(ids)) != LIMIT_N or len(ids) != LIMIT_N:
            c.err(f"limited: {len(set(ids))} of {LIMIT_N} arrived, {len(ids) - len(set(ids))} twice")
        ts = [t for t, _ in recs]
        if not ts:
            return
        early = [t for t in ts if t < t_due]
        if early:
            c.err(f"limited: {len(early)} fires before they were due")
        fire_ats = [int(h.get("kdelay-fire-at", 0)) for _, h in recs]
        if fire_ats != sorted(fire_ats) or set(fire_ats) != {t_due}:
            c.err("limited: not in due order, or not the due time given")
        # No second holds more than the rate and its burst (the bucket's
        # bound), give or take 5 fires: the bucket runs on the monotonic
        # clock, the record timestamps on the wall clock, in whole ms.
        worst, j = 0, 0
        ts_sorted = sorted(ts)
        for i, t in enumerate(ts_sorted):
            while ts_sorted[j] < t - 998:
                j += 1
            worst = max(worst, i - j + 1)
        if worst > LIMIT_RATE + LIMIT_BURST + 5:
            c.err(f"limited: {worst} fires within one second, the limit allows "
                  f"{LIMIT_RATE} + a burst of {LIMIT_BURST}")
        span = ts_sorted[-1] - ts_sorted[0]
        least = (LIMIT_N - LIMIT_BURST) * 1000 / LIMIT_RATE
        if span < least * 0.95:
            c.err(f"limited: arrived over {span} ms, the limit needs {least:.0f}")
        curve = [0] * (int((ts_sorted[-1] - t_due) // 500) + 1)
        for t in ts_sorted:
            curve[int((t - t_due) // 500)] += 1
        # What the forwarder says of it.
        waited_s = waited = None
        if s.http_port:
            body = urllib.request.urlopen(f"http://127.0.0.1:{s.http_port}/metrics",
                                          timeout=10).read().decode()
            label = f'{{target="{topic}"}}'
            for line in body.splitlines():
                if line.startswith("kdelay_forwarder_rate_limited_seconds_total" + label):
                    waited_s = float(line.split()[-1])
                if line.startswith("kdelay_forwarder_rate_limited_fires_total" + label):
                    waited = float(line.split()[-1])
        if not waited_s or not waited or waited < LIMIT_N - LIMIT_BURST - 10:
            c.err(f"limited: /metrics says {waited} fires waited {waited_s} s")
        st = s.kdelayctl("stats", "--json", "--targets-window", "5m", check=False)
        try:
            rows = [r for r in json.loads(st.stdout).get("rate_limited_targets", [])
                    if r["topic"] == topic]
        except ValueError:
            rows = []
        if len(rows) != 1 or rows[0]["fires"] != LIMIT_N or rows[0]["late_max_ms"] < least * 0.9 \
                or rows[0]["limit"] != topic or rows[0]["rate"] != LIMIT_RATE:
            c.err(f"limited: kdelayctl stats says {rows or st.stdout[-300:]} {st.stderr[-300:]}")
        late = rows[0] if rows else {}
        c.figures = (f"{len(set(ids))} of {LIMIT_N} due at one ms arrived over {span} ms "
                     f"(the limit needs {least:.0f}), early {len(early)}, most in one second "
                     f"{worst}; per 500 ms: {curve}; /metrics waited {waited:.0f} fires "
                     f"{waited_s:.1f} s; stats late p50 {late.get('late_p50_ms')} "
                     f"p99 {late.get('late_p99_ms')} max {late.get('late_max_ms')} ms")
    except Exception as e:  # a crash of the harness is a failure too
        c.err(f"{type(e).__name__}: {e}")


def warm_up(langs):
    """Runs each language's programs once (--help) before any timed step:
    examples/node/run.sh installs its npm packages on its first run, and on
    a fresh machine that ran inside task A's 6 s (written 9 s after its
    step began: "A late by 3156 ms", twice in CI)."""
    for name, (sched, fate) in langs.items():
        t0 = now_ms()
        for argv in (sched, fate):
            r = subprocess.run(argv + ["--help"], capture_output=True, text=True, timeout=600)
            if r.returncode != 0:
                fail(f"{name}: {' '.join(argv[-2:])} --help: exit {r.returncode}: "
                     f"{r.stderr.strip()[-400:]}")
        log(f"{name}: ready in {now_ms() - t0} ms")


def main():
    langs, missing = languages()
    for m in missing:
        log(f"cannot run {m}")
    if missing:
        fail("a client example cannot run here")
    warm_up(langs)
    stack = Stack()
    try:
        stack.up()
        t0 = now_ms()
        # A first fire to the target, 1 s before any checked one: an
        # exactly_once forwarder's first transaction to a new target
        # waits for its metadata (about 1 s), which is not what the
        # languages' timing checks measure.
        warm = Producer({**stack.kconf, "enable.idempotence": True, "acks": "all"})
        pysched.schedule(warm, stack.prefix, pysched.parse_tiers(TIERS), stack.target,
                         "warm-up", "warm-up", t0 + 1000, task_id=f"warm-{stack.tag}")
        if warm.flush(30):
            fail("the warm-up task was not produced")
        runs = [Lang(n, sched, fate, stack) for n, (sched, fate) in langs.items()]
        arrived, until = {}, {"ms": 2**62}
        consumer = threading.Thread(target=consume, args=(stack, until, arrived))
        consumer.start()
        retry = Retry(stack)
        chain = Retry(stack)
        limit = Retry(stack)
        langs_threads = [threading.Thread(target=lang_main, args=(l,)) for l in runs]
        threads = [threading.Thread(target=retry_main, args=(retry,)),
                   threading.Thread(target=chain_main, args=(chain,)),
                   # Claimed (all 2,000) before any race task is: claims
                   # that many at once would hold the races' claims up.
                   threading.Thread(target=limit_main, args=(limit, t0 + 4000))]
        for t in langs_threads + threads:
            t.start()
        for t in langs_threads:
            t.join()
        # Every A has fired, no language cancels any more.
        rthreads = [threading.Thread(target=runs_check, args=(stack, l)) for l in runs]
        for t in rthreads:
            t.start()
        for t in rthreads:
            t.join(120)
        recon = Retry(stack)
        reconcile_window(stack, runs, recon)
        until["ms"] = now_ms() + 3000  # a cancelled task would come by now
        for t in threads:
            t.join()
        consumer.join()
        failed = False
        for l in runs:
            check_arrivals(l, arrived)
            answers = list(l.race_answers.values())
            log(f"{l.name}: A late {getattr(l, 'a_late', None)} ms; race cancelled "
                f"{answers.count('cancelled')}, too_late {answers.count('too_late')}, "
                f"unknown {answers.count('unknown')}; cancelled delivered "
                f"{sum(1 for t in l.expect_never if t in arrived)}; status checked "
                f"{len(l.statuses)}")
            rec = getattr(l, "reconcile", {})
            log(f"{l.name}: while a reconciliation was pending: unseen id {rec.get('pending')}, "
                f"fired A {rec.get('A')}; once cleared: unseen id {rec.get('cleared')}")
            log(f"{l.name}: runs: {getattr(l, 'runs', None)}")
            for e in l.errors:
                failed = True
                print(f"test_clients: FAIL: {l.name}: {e}", file=sys.stderr)
        log(f"retries: {retry.figures}")
        log(f"retry chain: {chain.figures}")
        log(f"rate limit: {limit.figures}")
        log(f"reconciliation pending: {recon.figures}")
        for what, r in (("retry", retry), ("chain", chain), ("limit", limit),
                        ("reconcile", recon)):
            for e in r.errors:
                failed = True
                print(f"test_clients: FAIL: {what}: {e}", file=sys.stderr)
        if failed:
            with open(stack.fwd_log, encoding="utf-8", errors="replace") as f:
                sys.stderr.write("forwarder log (tail):\n" + "".join(f.readlines()[-30:]))
            return 1
        log("PASS")
        return 0
    finally:
        stack.down()


if __name__ == "__main__":
    sys.exit(main())
