#!/usr/bin/python3
# SPDX-License-Identifier: Apache-2.0
"""A plain Kafka client, not kdelay's (confluent-kafka-python, Debian's
python3-confluent-kafka), takes the client properties file that
`deploy/local/stack.sh env` names (KDELAY_KAFKA_CONFIG) as it is: it
creates a topic, produces one record and reads it back. On a secured stack
this shows the file holds nothing kdelay-only (a `file:` password would be
sent as the literal password: "Authentication failed"). Without the
variable (a plain stack) the client uses KDELAY_BROKERS alone."""
import os
import sys
import time
import uuid

from confluent_kafka import Consumer, Producer, version
from confluent_kafka.admin import AdminClient, NewTopic


def fail(msg):
    print(f"test_plain_client: FAIL: {msg}", file=sys.stderr)
    sys.exit(1)


def read_props(path):
    """Kafka's client properties format: name=value, # and ! comments."""
    props = {}
    with open(path, encoding="utf-8") as f:
        for n, line in enumerate(f, 1):
            s = line.strip()
            if not s or s[0] in "#!":
                continue
            name, sep, value = s.partition("=")
            if not sep:
                fail(f'"{path}" line {n}: expected name=value')
            props[name.strip()] = value.strip()
    return props


def main():
    brokers = os.environ.get("KDELAY_BROKERS")
    if not brokers:
        fail("KDELAY_BROKERS is not set (eval \"$(deploy/local/stack.sh env)\")")
    path = os.environ.get("KDELAY_KAFKA_CONFIG", "")
    conf = read_props(path) if path else {}
    for name, value in conf.items():
        if value.startswith(("file:", "env:")):
            fail(f'"{path}": {name} is a kdelay-only reference')
    conf.setdefault("bootstrap.servers", brokers)
    topic = f"itplain-{uuid.uuid4().hex[:12]}"
    admin = AdminClient(conf)
    admin.create_topics([NewTopic(topic, 1, 1)])[topic].result(30)
    try:
        errors = []
        producer = Producer(conf)
        producer.produce(topic, key=b"k", value=b"plain",
                         on_delivery=lambda err, _m: err and errors.append(err))
        if producer.flush(30) or errors:
            fail(f"produce: {errors or 'not delivered in 30 s'}")
        consumer = Consumer({**conf, "group.id": topic,
                             "auto.offset.reset": "earliest"})
        consumer.subscribe([topic])
        got, deadline = None, time.monotonic() + 30
        while got is None and time.monotonic() < deadline:
            m = consumer.poll(1.0)
            if m is not None and m.error():
                fail(f"consume: {m.error()}")
            if m is not None:
                got = m.value()
        consumer.close()
        if got != b"plain":
            fail(f"read back {got!r}, want b'plain'")
    finally:
        admin.delete_topics([topic])
    print(f"test_plain_client: {conf.get('security.protocol', 'PLAINTEXT')}, "
          f"confluent-kafka {version()[0]}: produced and read back 1 record "
          f"with {'the properties file as it is' if path else 'brokers only'}")


if __name__ == "__main__":
    main()
