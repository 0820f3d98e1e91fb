#!/usr/bin/env python3
# SPDX-License-Identifier: Apache-2.0
"""Retry a consumed Kafka record later, from Python: kdelay_retry()'s header
protocol (docs/retries.md, include/kdelay/retry.h) on confluent-kafka.

A record whose processing failed is scheduled again as a kdelay task (its
key, value and user headers, to the topic it came from), due after an
exponential backoff with jitter, carrying kdelay-attempt,
kdelay-original-topic/-partition/-offset and kdelay-failures; after
max_attempts failures it goes to the dead-letter topic instead, with
kdelay-dead-reason. The retry's task id is derived from the original record
and the attempt, as the C library derives it, so a retry written twice (a
crash before the offset commit) fires once, and records retried by a C,
Java or Python consumer count on alike.

Needs confluent-kafka (Debian: python3-confluent-kafka). As a module:

    policy = Policy(dead_topic="orders.dlt", backoff_initial_ms=1000)
    result = retry(producer, "kdelay", parse_tiers(LADDER), msg, policy,
                   reason="payment API timed out")

on your own idempotent producer (acks=all); produce it, as the C library
does, in the consumer's transaction when it has one. As a command (a
stand-in consumer that fails every record, for trying the protocol):

    retry.py --brokers B --group G --topic IN --dead-topic DEAD --count 1

prints one JSON line per record handled; exit 0 after --count records, 1
on --timeout, 2 on bad arguments.
"""

import argparse
import json
import os
import random
import re
import sys
import time
from dataclasses import dataclass

from schedule import (_TOPIC, DEFAULT_PREFIX, DEFAULT_TIERS, choose_tier, parse_duration,
                      parse_tiers, schedule)

ATTEMPT = "kdelay-attempt"
ORIG_TOPIC = "kdelay-original-topic"
ORIG_PARTITION = "kdelay-original-partition"
ORIG_OFFSET = "kdelay-original-offset"
FAILURES = "kdelay-failures"
DEAD_REASON = "kdelay-dead-reason"
REASON_MAX = 200
_DIGITS = re.compile(rb"[0-9]{1,19}")


@dataclass
class Policy:
    """kdelay_retry_policy_t: the n-th retry is due d(n) = min(max, initial
    * multiplier^(n-1)), less up to jitter * d(n)."""
    dead_topic: str
    backoff_initial_ms: int = 1000
    backoff_max_ms: int = 3600 * 1000
    multiplier: float = 2.0
    jitter: float = 0.2
    max_attempts: int = 5
    retry_topic: str = None  # None: the original topic

    def check(self):
        def topic(t):
            return t is not None and _TOPIC.fullmatch(t) and t not in (".", "..")
        if not topic(self.dead_topic):
            raise ValueError("policy dead_topic must be a valid topic name")
        if self.retry_topic is not None and not topic(self.retry_topic):
            raise ValueError("policy retry_topic is not a valid topic name")
        if not 0 <= self.backoff_initial_ms <= self.backoff_max_ms <= 10 * 365 * 86400000:
            raise ValueError("policy backoff: 0 <= initial <= max <= 10 years")
        if not 1.0 <= self.multiplier <= 1000.0:
            raise ValueError("policy multiplier must be in 1 .. 1000")
        if not 0.0 <= self.jitter <= 1.0:
            raise ValueError("policy jitter must be in 0 .. 1")
        if not 1 <= self.max_attempts <= 100:
            raise ValueError("policy max_attempts must be in 1 .. 100")


def _number(value, top):
    if value is None or not _DIGITS.fullmatch(value):
        return -1
    n = int(value)
    return n if n <= top else -1


def _state(msg):
    """(failures, topic, partition, offset, history, bad header or None)."""
    hdrs = {}
    for name, value in msg.headers() or []:
        hdrs[name] = value if value is not None else b""  # the last one wins
    st = [0, msg.topic(), msg.partition(), msg.offset(), b"", None]
    if ATTEMPT not in hdrs:
        return st  # a first failure: the record's own coordinates
    n = _number(hdrs[ATTEMPT], 1000000)
    t = hdrs.get(ORIG_TOPIC)
    part = _number(hdrs.get(ORIG_PARTITION), 2**31 - 1)
    off = _number(hdrs.get(ORIG_OFFSET), 2**63 - 1)
    if n < 1:
        st[5] = ATTEMPT
    elif t is None or not _TOPIC.fullmatch(t.decode("ascii", "replace")) or t in (b".", b".."):
        st[5] = ORIG_TOPIC
    elif part < 0:
        st[5] = ORIG_PARTITION
    elif off < 0:
        st[5] = ORIG_OFFSET
    else:
        st = [n, t.decode("ascii"), part, off, hdrs.get(FAILURES, b""), None]
    return st


def _retry_id(topic, partition, offset, attempt, target):
    long_form = f"retry:{topic}:{partition}:{offset}:{attempt}"
    if target != topic:
        long_form += f":{target}"
    if len(long_form.encode()) <= 128:
        return long_form
    h = 14695981039346656037  # FNV-1a 64 of the long form, as retry.c
    for b in long_form.encode():
        h = ((h ^ b) * 1099511628211) & 0xFFFFFFFFFFFFFFFF
    return f"retry:{topic[:64]}:{h:016x}:{attempt}"


def retry(producer, prefix, tiers, msg, policy, reason=None, on_delivery=None):
    """Schedules msg (a consumed confluent_kafka.Message) again, or
    dead-letters it; returns {"outcome", "attempt", "task_id",
    "fire_at_ms", "to"}. Does not wait: flush the producer (or commit the
    transaction) and check on_delivery before committing msg's offset."""
    policy.check()
    failures, topic, partition, offset, history, bad = _state(msg)
    attempt = 1 if bad else failures + 1
    now = time.time_ns() // 1_000_000
    why = "".join(" " if ord(c) < 0x20 or ord(c) == 0x7F else c for c in reason or "")
    why = why.encode("utf-8")[:REASON_MAX].decode("utf-8", "ignore")
    line = f"attempt={attempt} failed_at={now} reason={why}".encode("utf-8")
    history = history + b"\n" + line if history else line
    user = [(n, v) for n, v in msg.headers() or [] if not n.startswith("kdelay-")]
    ours = [(ATTEMPT, str(attempt).encode()), (ORIG_TOPIC, topic.encode()),
            (ORIG_PARTITION, str(partition).encode()), (ORIG_OFFSET, str(offset).encode()),
            (FAILURES, history)]
    if bad or attempt > policy.max_attempts:
        dead_why = f"bad-retry-header {bad}" if bad else "retries-exhausted"
        producer.produce(policy.dead_topic, key=msg.key(), value=msg.value(),
                         headers=user + ours + [(DEAD_REASON, dead_why.encode())],
                         on_delivery=on_delivery)
        return {"outcome": "dead", "attempt": attempt, "task_id": None,
                "fire_at_ms": None, "to": policy.dead_topic}
    target = policy.retry_topic or topic
    d = min(float(policy.backoff_max_ms),
            policy.backoff_initial_ms * policy.multiplier ** (attempt - 1))
    fire_at = now + int(d - policy.jitter * d * random.random())
    task_id = _retry_id(topic, partition, offset, attempt, target)
    schedule(producer, prefix, tiers, target, msg.key(), msg.value(), fire_at,
             task_id=task_id, headers=user, kdelay_headers=ours, on_delivery=on_delivery)
    return {"outcome": "scheduled", "attempt": attempt, "task_id": task_id,
            "fire_at_ms": fire_at, "to": f"{prefix}.tier.{choose_tier(tiers, fire_at - now)}"}


def main(argv=None):
    p = argparse.ArgumentParser(
        prog="retry.py",
        description="Consume records and retry each later (kdelay's retry header protocol).")
    p.add_argument("--brokers", default=os.environ.get("KDELAY_BROKERS", "127.0.0.1:19092"))
    p.add_argument("--group", required=True)
    p.add_argument("--topic", required=True, help="the topic consumed")
    p.add_argument("--dead-topic", required=True)
    p.add_argument("--prefix", default=DEFAULT_PREFIX)
    p.add_argument("--tiers", default=DEFAULT_TIERS)
    p.add_argument("--backoff", default="1s")
    p.add_argument("--backoff-max", default="1h")
    p.add_argument("--multiplier", type=float, default=2.0)
    p.add_argument("--jitter", type=float, default=0.2)
    p.add_argument("--max-attempts", type=int, default=5)
    p.add_argument("--retry-topic")
    p.add_argument("--reason", default="processing failed")
    p.add_argument("--count", type=int, default=1)
    p.add_argument("--timeout", default="30s")
    a = p.parse_args(argv)
    try:
        tiers = parse_tiers(a.tiers)
        policy = Policy(dead_topic=a.dead_topic, backoff_initial_ms=parse_duration(a.backoff),
                        backoff_max_ms=parse_duration(a.backoff_max), multiplier=a.multiplier,
                        jitter=a.jitter, max_attempts=a.max_attempts, retry_topic=a.retry_topic)
        policy.check()
        deadline = time.time() + parse_duration(a.timeout) / 1000
    except ValueError as e:
        p.error(str(e))
    from confluent_kafka import Consumer, Producer

    producer = Producer({"bootstrap.servers": a.brokers, "enable.idempotence": True,
                         "acks": "all", "partitioner": "murmur2_random"})
    consumer = Consumer({"bootstrap.servers": a.brokers, "group.id": a.group,
                         "auto.offset.reset": "earliest", "enable.auto.commit": False,
                         "isolation.level": "read_committed"})
    consumer.subscribe([a.topic])
    handled = 0
    try:
        while handled < a.count and time.time() < deadline:
            msg = consumer.poll(0.2)
            if msg is None or msg.error():
                continue
            errors = []
            out = retry(producer, a.prefix, tiers, msg, policy, a.reason,
                        on_delivery=lambda err, _m: err and errors.append(err))
            if producer.flush(30) or errors:
                print(f"retry.py: error: the retry of {msg.topic()}/{msg.partition()}/"
                      f"{msg.offset()} was not written: {errors}", file=sys.stderr)
                return 1  # offset not committed: read again next time
            consumer.commit(message=msg, asynchronous=False)
            print(json.dumps({"topic": msg.topic(), "partition": msg.partition(),
                              "offset": msg.offset(), **out}), flush=True)
            handled += 1
    finally:
        consumer.close()
    if handled < a.count:
        print(f"retry.py: error: {handled} of {a.count} records in {a.timeout}", file=sys.stderr)
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
