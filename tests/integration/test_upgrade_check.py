#!/usr/bin/python3
# SPDX-License-Identifier: Apache-2.0
"""Helper of test_upgrade.sh (confluent-kafka-python, Debian's
python3-confluent-kafka, and the mariadb/mysql client):

  mysql-url DB            KDELAY_MYSQL_URL with its database replaced by DB
  sql STATEMENT           runs STATEMENT on the server of KDELAY_MYSQL_URL
                          (the password, if any, through MYSQL_PWD)
  create-topic T N        creates topic T with N partitions
  delete-topics T...      deletes topics (errors ignored)
  verify ARGS             reads the target topic from the beginning
                          (read_committed) and checks the upgrade's figures

Kafka settings: KDELAY_BROKERS, and KDELAY_KAFKA_CONFIG's properties file
when set (as test_plain_client.py)."""
import argparse
import os
import shutil
import statistics
import subprocess
import sys
import time
import urllib.parse

import it_kafka  # noqa: E402  (beside this file)
from confluent_kafka import Consumer, KafkaException, TopicPartition
from confluent_kafka.admin import AdminClient, NewTopic


def fail(msg):
    print(f"test_upgrade_check: FAIL: {msg}", file=sys.stderr)
    sys.exit(1)


def kafka_conf():
    try:
        return it_kafka.kafka_conf()
    except RuntimeError as e:
        fail(str(e))


def parse_url():
    url = os.environ.get("KDELAY_MYSQL_URL")
    if not url:
        fail("KDELAY_MYSQL_URL is not set")
    u = urllib.parse.urlsplit(url)
    if u.scheme != "mysql":
        fail("KDELAY_MYSQL_URL is not a mysql:// URL")
    return url, u


def cmd_mysql_url(args):
    url, u = parse_url()
    print(urllib.parse.urlunsplit(
        (u.scheme, u.netloc, "/" + args.db, u.query, u.fragment)))


def cmd_sql(args):
    _, u = parse_url()
    client = shutil.which("mariadb") or shutil.which("mysql")
    if not client:
        fail("no mariadb or mysql client (package mariadb-client)")
    argv = [client, "--batch", "--skip-column-names",
            f"--host={u.hostname or '127.0.0.1'}", f"--port={u.port or 3306}",
            f"--user={urllib.parse.unquote(u.username or 'root')}"]
    query = dict(urllib.parse.parse_qsl(u.query))
    if query.get("ssl-ca"):
        argv += ["--ssl", f"--ssl-ca={query['ssl-ca']}"]
        if query.get("ssl-mode", "").upper() in ("VERIFY_CA", "VERIFY_IDENTITY"):
            argv.append("--ssl-verify-server-cert")
    if query.get("ssl-cert"):
        argv.append(f"--ssl-cert={query['ssl-cert']}")
    if query.get("ssl-key"):
        argv.append(f"--ssl-key={query['ssl-key']}")
    env = dict(os.environ)
    password = u.password and urllib.parse.unquote(u.password)
    password = password or os.environ.get("KDELAY_MYSQL_PASSWORD")
    if password:
        env["MYSQL_PWD"] = password
    r = subprocess.run(argv + ["-e", args.statement], env=env, check=False)
    sys.exit(r.returncode)


def cmd_create_topic(args):
    admin = AdminClient(kafka_conf())
    admin.create_topics([NewTopic(args.topic, args.partitions, 1)])[
        args.topic].result(30)


def cmd_delete_topics(args):
    admin = AdminClient(kafka_conf())
    for topic, fut in admin.delete_topics(args.topics).items():
        try:
            fut.result(30)
        except KafkaException:
            pass


def read_target(topic):
    """Every record of topic, read_committed, from the beginning to the
    end offsets: a list of (kdelay-id, timestamp ms, fire-at ms)."""
    conf = kafka_conf()
    consumer = Consumer({**conf, "group.id": f"{topic}-verify",
                         "enable.auto.commit": False,
                         "isolation.level": "read_committed"})
    meta = consumer.list_topics(topic, timeout=30).topics[topic]
    if meta.error:
        fail(f"target {topic}: {meta.error}")
    parts, ends = [], {}
    for p in meta.partitions:
        lo, hi = consumer.get_watermark_offsets(TopicPartition(topic, p),
                                                timeout=30)
        if hi > lo:
            ends[p] = hi
            parts.append(TopicPartition(topic, p, lo))
    consumer.assign(parts)
    records, deadline = [], time.monotonic() + 60
    while ends and time.monotonic() < deadline:
        m = consumer.poll(0.5)
        if m is not None and m.error():
            fail(f"consume {topic}: {m.error()}")
        if m is not None:
            h = dict(m.headers() or [])
            fire_at = h.get("kdelay-fire-at")
            records.append((h.get("kdelay-id", b"").decode(),
                            m.timestamp()[1],
                            int(fire_at) if fire_at else None))
        # read_committed: the last offsets may be transaction markers, so
        # a partition is read when its position reaches its end offset.
        for tp in consumer.position([TopicPartition(topic, p) for p in ends]):
            if tp.offset >= ends[tp.partition]:
                del ends[tp.partition]
    if ends:
        fail(f"target {topic}: partitions {sorted(ends)} not read to their "
             "end in 60 s")
    consumer.close()
    return records


def cmd_verify(args):
    tasks = {}  # id -> (fire_at, by)
    with open(args.tasks, encoding="utf-8") as f:
        for line in f:
            tid, fire_at, by = line.split()
            tasks[tid] = (int(fire_at), by)
    cancelled = {}  # id -> by
    with open(args.cancelled, encoding="utf-8") as f:
        for line in f:
            tid, by = line.split()
            cancelled[tid] = by
    repeated = {}  # id -> fire_at of its second schedule
    if args.repeated:
        with open(args.repeated, encoding="utf-8") as f:
            for line in f:
                tid, fire_at = line.split()
                repeated[tid] = int(fire_at)
    records = read_target(args.target)
    seen, duplicates, early, unknown, lateness = {}, 0, [], [], []
    old_after_migration, again = 0, []
    for tid, ts, fire_at in records:
        if tid not in tasks:
            unknown.append(tid)
            continue
        if tid in repeated and fire_at == repeated[tid]:
            again.append(tid)  # the second schedule of a fired id
            continue
        want = tasks[tid][0]
        if fire_at != want:
            fail(f"task {tid}: kdelay-fire-at {fire_at}, scheduled {want}")
        if tid in seen:
            duplicates += 1
            continue
        seen[tid] = ts
        if ts < want - args.tolerance_ms:
            early.append(f"{tid}:{ts - want}ms")
        lateness.append(ts - want)
        if args.migrated_ms <= ts < args.replaced_ms:
            old_after_migration += 1
    lost = sorted(t for t in tasks if t not in cancelled and t not in seen)
    cancelled_delivered = sorted(t for t in cancelled if t in seen)
    by = lambda d, who: sum(1 for v in d.values()
                            if (v[1] if isinstance(v, tuple) else v) == who)
    lateness.sort()
    p50 = int(statistics.median(lateness)) if lateness else 0
    mx = max(lateness) if lateness else 0
    print(f"test_upgrade: {args.mode}: previous {args.previous} -> next "
          f"{args.next}: scheduled {len(tasks)} ({by(tasks, 'previous')} by "
          f"previous, {by(tasks, 'next')} by next), cancelled "
          f"{len(cancelled)} ({by(cancelled, 'previous')} by previous after "
          f"the migration, {by(cancelled, 'next')} by next), delivered "
          f"{len(seen)}, lost {len(lost)}, early {len(early)}, duplicates "
          f"{duplicates}, cancelled delivered {len(cancelled_delivered)}, "
          f"fired by previous forwarders after the migration "
          f"{old_after_migration}, lateness p50 {p50} ms max {mx} ms; "
          f"fired ids scheduled again {len(repeated)}, delivered again "
          f"{len(again)}",
          flush=True)
    problems = []
    if lost:
        problems.append(f"lost {len(lost)}: {' '.join(lost[:10])}")
    if early:
        problems.append(f"early {len(early)}: {' '.join(early[:10])}")
    if cancelled_delivered:
        problems.append("cancelled delivered: "
                        + " ".join(cancelled_delivered[:10]))
    if unknown:
        problems.append(f"{len(unknown)} records of unknown tasks: "
                        + " ".join(unknown[:10]))
    if again:
        problems.append(f"delivered again {len(again)} of the fired ids "
                        "scheduled again: " + " ".join(sorted(set(again))[:10]))
    missing = sorted(t for t in repeated if t not in seen)
    if missing:
        problems.append("fired ids scheduled again without their first "
                        "delivery: " + " ".join(missing[:10]))
    if args.mode == "exactly_once" and duplicates:
        problems.append(f"duplicates {duplicates} in exactly_once")
    if old_after_migration == 0:
        problems.append("no task fired between the migration and the first "
                        "forwarder's replacement: the previous release's "
                        "forwarders did not work on after db migrate")
    for p in problems:
        print(f"test_upgrade: {args.mode}: FAIL: {p}", file=sys.stderr)
    sys.exit(1 if problems else 0)


def main():
    ap = argparse.ArgumentParser()
    sub = ap.add_subparsers(dest="cmd", required=True)
    p = sub.add_parser("mysql-url")
    p.add_argument("db")
    p.set_defaults(fn=cmd_mysql_url)
    p = sub.add_parser("sql")
    p.add_argument("statement")
    p.set_defaults(fn=cmd_sql)
    p = sub.add_parser("create-topic")
    p.add_argument("topic")
    p.add_argument("partitions", type=int)
    p.set_defaults(fn=cmd_create_topic)
    p = sub.add_parser("delete-topics")
    p.add_argument("topics", nargs="+")
    p.set_defaults(fn=cmd_delete_topics)
    p = sub.add_parser("verify")
    p.add_argument("--mode", required=True)
    p.add_argument("--target", required=True)
    p.add_argument("--tasks", required=True, help="lines: id fire_at_ms by")
    p.add_argument("--cancelled", required=True, help="lines: id by")
    p.add_argument("--repeated", help="lines: id fire_at_ms of a second "
                   "schedule of an id that fired (never to be delivered)")
    p.add_argument("--previous", required=True)
    p.add_argument("--next", required=True)
    p.add_argument("--migrated-ms", type=int, required=True)
    p.add_argument("--replaced-ms", type=int, required=True)
    p.add_argument("--tolerance-ms", type=int, default=5)
    p.set_defaults(fn=cmd_verify)
    args = ap.parse_args()
    args.fn(args)


if __name__ == "__main__":
    main()
