#!/usr/bin/env python3
# SPDX-License-Identifier: Apache-2.0
"""Schedule a kdelay task from Python, by the wire format alone.

A task is one Kafka record in the tier topic ``<prefix>.tier.<tier>`` with
the kdelay headers (docs/wire-format.md): ``kdelay-v``, ``kdelay-id``,
``kdelay-target`` and ``kdelay-fire-at``. Key, value and other headers are
the user's and are delivered unchanged to the target topic when the task
is due. The tier is chosen as docs/wire-format.md "Choosing the tier"
says: the largest tier delay <= fire-at - now, else the smallest tier.

Needs confluent-kafka (Debian: python3-confluent-kafka). As a command:

    schedule.py --brokers 127.0.0.1:19092 --topic orders.reminders \\
        --key order-42 --value 'ship it' --delay 30s --header trace=abc

prints the task id (a ULID unless --id gives one); exit 0 once Kafka has
acknowledged the record, 1 when it did not, 2 on bad arguments. As a
module: ``schedule(producer, prefix, tiers, target, key, value,
fire_at_ms, task_id=None, headers=None)`` on your own idempotent producer.
"""

import argparse
import datetime
import os
import re
import sys
import threading
import time

# kdelay's default ladder (property `tiers`, src/lib/shared/conf_props.c).
DEFAULT_TIERS = ("1s,30s,1m,1m30s,2m,3m,5m,8m,12m,20m,30m,45m,1h,1h30m,4h,6h,16h,"
                 "1d,2d12h,7d")
DEFAULT_PREFIX = "kdelay"

_UNITS = [("d", 86400000), ("h", 3600000), ("m", 60000), ("s", 1000), ("ms", 1)]
_DURATION = re.compile(r"(\d+)(ms|d|h|m|s)")
_TOPIC = re.compile(r"[A-Za-z0-9._-]{1,249}")
_CROCKFORD = "0123456789ABCDEFGHJKMNPQRSTVWXYZ"


def parse_duration(text):
    """'250ms', '30s', '1h30m' (largest unit first) -> milliseconds."""
    if not text:
        raise ValueError("empty duration")
    pos, total, last = 0, 0, -1
    while pos < len(text):
        m = _DURATION.match(text, pos)
        if not m:
            raise ValueError(f"{text!r} is not a duration (e.g. 30s, 5m)")
        unit = [u for u, _ in _UNITS].index(m.group(2))
        if unit <= last:
            raise ValueError(f"{text!r}: units must come largest first, once")
        total += int(m.group(1)) * _UNITS[unit][1]
        last, pos = unit, m.end()
    return total


def format_duration(ms):
    """Milliseconds -> canonical duration text, the tier's name (90000 -> '1m30s')."""
    if ms == 0:
        return "0s"
    out = ""
    for suffix, size in _UNITS:
        if ms >= size:
            out += f"{ms // size}{suffix}"
            ms %= size
    return out


def parse_tiers(text):
    """'1s,5s,1m' -> [(1000, '1s'), (5000, '5s'), (60000, '1m')], ascending."""
    tiers = sorted({parse_duration(t.strip()) for t in text.split(",")})
    if not tiers or tiers[0] <= 0:
        raise ValueError(f"bad tier list {text!r}")
    return [(ms, format_duration(ms)) for ms in tiers]


def choose_tier(tiers, remaining_ms):
    """The largest tier whose delay <= remaining_ms, else the smallest."""
    name = tiers[0][1]
    for delay, tier in tiers:
        if delay <= remaining_ms:
            name = tier
    return name


_ulid_lock = threading.Lock()
_ulid_last = [-1, 0]  # last millisecond, last 80-bit random part


def new_ulid():
    """A ULID as the library makes them: 48-bit ms time, 80 random bits,
    26 Crockford base32 digits, strictly increasing within this process."""
    with _ulid_lock:
        now = time.time_ns() // 1_000_000
        if now <= _ulid_last[0]:
            _ulid_last[1] = (_ulid_last[1] + 1) % (1 << 80)
            if _ulid_last[1] == 0:
                _ulid_last[0] += 1
        else:
            _ulid_last[:] = [now, int.from_bytes(os.urandom(10), "big")]
        n = (_ulid_last[0] << 80) | _ulid_last[1]
    return "".join(_CROCKFORD[(n >> (5 * i)) & 31] for i in range(25, -1, -1))


def check_task(prefix, target, fire_at_ms, task_id, headers):
    """Raises ValueError for what a forwarder would dead-letter, or what
    the library refuses (a user header in the reserved kdelay- namespace)."""
    if not _TOPIC.fullmatch(target) or target in (".", ".."):
        raise ValueError(f"invalid target topic {target!r}")
    if target.startswith(prefix + ".tier.") or target == prefix + ".dead":
        raise ValueError(f"target {target!r} is one of kdelay's own topics")
    if not 0 <= fire_at_ms < 2**63:
        raise ValueError("fire-at out of range")
    if task_id is not None:
        raw = task_id.encode("utf-8")
        if not 1 <= len(raw) <= 128 or any(c < 0x20 or c == 0x7F for c in raw):
            raise ValueError(
                "task id must be 1..128 bytes of UTF-8 without control characters"
            )
    for name, _ in headers or []:
        if name.startswith("kdelay-"):
            raise ValueError(f"header {name!r}: the kdelay- namespace is reserved")


def schedule(
    producer,
    prefix,
    tiers,
    target,
    key,
    value,
    fire_at_ms,
    task_id=None,
    headers=None,
    on_delivery=None,
    kdelay_headers=None,
):
    """Produces the task record on `producer` (a confluent_kafka.Producer
    with enable.idempotence=true, acks=all) and returns the task id. It does
    not wait: flush the producer and check `on_delivery` (err, msg).

    prefix: the topic prefix ("kdelay"); tiers: parse_tiers() output;
    key, value: str, bytes or None; fire_at_ms: epoch milliseconds;
    headers: [(name, value)] user headers, names not starting "kdelay-";
    kdelay_headers: kdelay's own optional headers added after them (the
    retry headers of retry.py), names starting "kdelay-"."""
    task_id = task_id if task_id is not None else new_ulid()
    check_task(prefix, target, fire_at_ms, task_id, headers)
    for name, _ in kdelay_headers or []:
        if not name.startswith("kdelay-"):
            raise ValueError(f"kdelay header {name!r} does not start kdelay-")
    headers = list(headers or []) + list(kdelay_headers or [])
    tier = choose_tier(tiers, fire_at_ms - time.time_ns() // 1_000_000)
    producer.produce(
        f"{prefix}.tier.{tier}",
        key=key,
        value=value,
        headers=[
            ("kdelay-v", b"1"),
            ("kdelay-id", task_id.encode("utf-8")),
            ("kdelay-target", target.encode("utf-8")),
            ("kdelay-fire-at", str(fire_at_ms).encode("ascii")),
        ]
        + headers,
        on_delivery=on_delivery,
    )
    return task_id


def _parse_at(text):
    """Epoch milliseconds or RFC 3339 ('2026-12-01T08:00:00Z')."""
    if text.isdigit():
        return int(text)
    t = datetime.datetime.fromisoformat(text.replace("Z", "+00:00"))
    if t.tzinfo is None:
        raise ValueError(f"--at {text!r}: give a time zone (Z or +HH:MM)")
    epoch = datetime.datetime(1970, 1, 1, tzinfo=datetime.timezone.utc)
    return (t - epoch) // datetime.timedelta(milliseconds=1)


def main(argv=None):
    p = argparse.ArgumentParser(
        description="Schedule a kdelay task (wire format v1); prints its id."
    )
    p.add_argument("--brokers", default=os.environ.get("KDELAY_BROKERS", "127.0.0.1:19092"))
    p.add_argument("--prefix", default=DEFAULT_PREFIX, help="topic prefix (kdelay)")
    p.add_argument("--tiers", default=DEFAULT_TIERS, help="the forwarders' tier ladder")
    p.add_argument("--topic", required=True, help="target topic")
    p.add_argument("--key", help="record key (none: null)")
    p.add_argument("--value", help="record value (none: null)")
    when = p.add_mutually_exclusive_group(required=True)
    when.add_argument("--at", help="due time: epoch ms or RFC 3339")
    when.add_argument("--delay", help="due after: 250ms, 30s, 5m, 1h30m")
    p.add_argument("--id", help="task id (default: a new ULID)")
    p.add_argument("--header", action="append", default=[], metavar="NAME=VALUE")
    a = p.parse_args(argv)

    try:
        from confluent_kafka import Producer
    except ImportError:
        sys.exit(
            "schedule.py: the confluent_kafka module is missing"
            " (Debian: apt-get install python3-confluent-kafka)"
        )
    try:
        tiers = parse_tiers(a.tiers)
        if a.at is not None:
            fire_at = _parse_at(a.at)
        else:
            fire_at = time.time_ns() // 1_000_000 + parse_duration(a.delay)
        headers = []
        for h in a.header:
            name, eq, val = h.partition("=")
            if not eq or not name:
                raise ValueError(f"--header {h!r}: want NAME=VALUE")
            headers.append((name, val.encode("utf-8")))
        check_task(a.prefix, a.topic, fire_at, a.id, headers)
    except ValueError as e:
        p.error(str(e))

    producer = Producer(
        {
            "bootstrap.servers": a.brokers,
            "enable.idempotence": True,
            "acks": "all",
            "message.timeout.ms": 30000,
            "partitioner": "murmur2_random",
        }
    )
    failures = []

    def report(err, msg):
        if err is not None:
            failures.append(f"{msg.topic()}: {err.str()}")

    try:
        task_id = schedule(
            producer, a.prefix, tiers, a.topic, a.key, a.value, fire_at,
            task_id=a.id, headers=headers, on_delivery=report,
        )
    except ValueError as e:
        p.error(str(e))
    except Exception as e:  # KafkaException, BufferError
        print(f"schedule.py: could not produce: {e}", file=sys.stderr)
        return 1
    left = producer.flush(35)
    if left:
        failures.append(f"{left} record(s) not delivered within 35 s")
    if failures:
        print(f"schedule.py: task {task_id} not scheduled: {'; '.join(failures)}", file=sys.stderr)
        return 1
    print(task_id)
    return 0


if __name__ == "__main__":
    sys.exit(main())
