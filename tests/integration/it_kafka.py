# SPDX-License-Identifier: Apache-2.0
"""The stack's Kafka settings for the Python harnesses (test_clients.py,
test_upgrade_check.py): KDELAY_BROKERS, and the client properties file
KDELAY_KAFKA_CONFIG names (Kafka's format: name=value, # and ! comments)
when set, as `deploy/local/stack.sh env` gives them."""
import os


def kafka_conf():
    """confluent-kafka settings; raises RuntimeError without KDELAY_BROKERS."""
    brokers = os.environ.get("KDELAY_BROKERS")
    if not brokers:
        raise RuntimeError('KDELAY_BROKERS is not set (eval "$(deploy/local/stack.sh env)")')
    conf = {}
    path = os.environ.get("KDELAY_KAFKA_CONFIG", "")
    if path:
        with open(path, encoding="utf-8") as f:
            for line in f:
                s = line.strip()
                if s and s[0] not in "#!" and "=" in s:
                    name, _, value = s.partition("=")
                    conf[name.strip()] = value.strip()
    conf.setdefault("bootstrap.servers", brokers)
    return conf
