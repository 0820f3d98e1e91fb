# SPDX-License-Identifier: Apache-2.0
"""Integration: a target rate limit holds through rebalances and
shutdowns, and a task waiting for it can still be cancelled (issue 35,
points 3 and 5). Both delivery modes at once, each with a group of its own
on the stack's broker and one database shared.

Per mode, forwarder A holds every tier partition when N tasks come due at
one instant to a target limited to RATE/s (burst BURST); then, while they
drain, B joins (JOIN_S after the due time), A stops with SIGTERM (A_STOP_S),
A starts again (A_BACK_S) and B stops with SIGTERM (B_STOP_S): a join, a
shutdown and a rolling restart. CANCELLED of the tasks due last are
cancelled at CANCEL_S, while they wait for the limit.

Asserted, per mode: every task not cancelled arrives (exactly_once:
once), none early; every cancel answers 0 (cancelled) and its task never
arrives; no second (a sliding one-second window over the arrival times)
holds more than RATE + 2 * BURST (the group's rate, plus a full bucket of
each forwarder's share: a new owner starts with its share of the burst).
Before, a revoke fired every queued task at once (a SIGTERM with 498
queued at 5/s: 502 fires in one second), and a queued task's claim was
taken claim_ahead before its fire time, so its cancel answered too late
for the whole wait. The figures line per mode gives the busiest second,
the drain's span and the hand-overs the forwarders counted."""
import os
import re
import sys
import threading
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import test_outage as to  # noqa: E402  (Stack, Fwd: the forwarders and tools)
from confluent_kafka import Consumer, Producer  # noqa: E402

RATE = 20
BURST = 2            # the default: a tenth of a second's worth
N = 240
CANCELLED = 10
DUE_IN_MS = 7000
CANCEL_S = 1.0
JOIN_S = 2.0
A_STOP_S = 5.0
A_BACK_S = 6.5
B_STOP_S = 9.0
MODES = [("alo", "at_least_once"), ("eos", "exactly_once")]


def log(msg):
    print(f"test_rate_limit: {msg}", flush=True)


class Group:
    """One mode's two forwarders, sharing prefix, target and group."""

    def __init__(self, st, short, delivery):
        self.a = to.Fwd(st, f"rl{short}-a", delivery, "hold")
        self.b = to.Fwd(st, f"rl{short}-b", delivery, "hold")
        for k in ("prefix", "target", "group"):
            setattr(self.b, k, getattr(self.a, k))
        limit = ["-X", f"forwarder.target_rate_limits={self.a.target}={RATE}",
                 "-X", "forwarder.shutdown_timeout=10s"]
        self.a.extra = self.b.extra = limit
        self.delivery = delivery
        self.name = short
        self.cancel_rc = []
        self.failed = None

    def cancel(self, ids):
        for tid in ids:
            r = self.a.ctl("cancel", tid, check=False)
            self.cancel_rc.append(r.returncode)

    def stop(self, f):
        rc = f.stop()
        if rc != 0:
            self.failed = f"{f.name}: exit {rc} after SIGTERM"


def started(fn, items):
    """fn(item) for each item, each on a thread of its own, started."""
    threads = [threading.Thread(target=fn, args=(x,)) for x in items]
    for th in threads:
        th.start()
    return threads


def joined(threads):
    for th in threads:
        th.join()


def busiest_second(ts):
    ts = sorted(ts)
    worst, j = 0, 0
    for i, t in enumerate(ts):
        while ts[j] <= t - 1000:
            j += 1
        worst = max(worst, i - j + 1)
    return worst


def main():
    st = to.Stack()
    groups = [Group(st, *m) for m in MODES]
    try:
        st.sql(f"CREATE DATABASE `{st.db}`", db=False)
        groups[0].a.ctl("db", "migrate")
        for g in groups:
            g.a.start()
        deadline = time.time() + 60
        for g in groups:
            g.a.wait_assigned(deadline)
        producer = Producer({**st.kconf, "enable.idempotence": True, "acks": "all"})
        t_due = to.now_ms() + DUE_IN_MS
        tiers = to.pysched.parse_tiers(to.TIERS)
        for g in groups:
            for i in range(N):
                tid = to.pysched.schedule(producer, g.a.prefix, tiers, g.a.target,
                                          f"k{i}", b"v", t_due)
                g.a.fire_at[tid] = t_due
        if producer.flush(30):
            to.fail("tasks not acknowledged in 30 s")
        consumers = started(lambda g: to.consume(st, [g.a], t_due + 40000), groups)

        def at(s):
            time.sleep(max(0, t_due + s * 1000 - to.now_ms()) / 1000)

        at(CANCEL_S)
        cancels = started(lambda g: g.cancel(list(g.a.fire_at)[-CANCELLED:]), groups)
        at(JOIN_S)
        for g in groups:
            g.b.start_process()
        at(A_STOP_S)
        joined(started(lambda g: g.stop(g.a), groups) + cancels)
        at(A_BACK_S)
        for g in groups:
            g.a.start_process()
        at(B_STOP_S)
        joined(started(lambda g: g.stop(g.b), groups))
        joined(consumers)
        lines = []
        for g in groups:
            if g.failed:
                to.fail(g.failed)
            cancelled = set(list(g.a.fire_at)[-CANCELLED:])
            if any(rc != 0 for rc in g.cancel_rc):
                to.fail(f"{g.name}: cancels of queued tasks answered {g.cancel_rc} "
                        "(want 0 each: they wait for the limit, unclaimed)")
            arrived_cancelled = [t for t in cancelled if g.a.arrived.get(t)]
            if arrived_cancelled:
                to.fail(f"{g.name}: {len(arrived_cancelled)} cancelled tasks arrived")
            want = [t for t in g.a.fire_at if t not in cancelled]
            lost = [t for t in want if not g.a.arrived.get(t)]
            if lost:
                to.fail(f"{g.name}: {len(lost)} of {len(want)} tasks did not arrive")
            ts = [x for t in want for x in g.a.arrived[t]]
            if min(ts) < t_due:
                to.fail(f"{g.name}: a task arrived {t_due - min(ts)} ms early")
            dups = sum(1 for t in want if len(g.a.arrived[t]) > 1)
            if g.delivery == "exactly_once" and dups:
                to.fail(f"{g.name}: {dups} duplicates in exactly_once")
            worst = busiest_second(ts)
            if worst > RATE + 2 * BURST:
                to.fail(f"{g.name}: {worst} arrivals within one second, the limit "
                        f"{RATE}/s with burst {BURST} allows {RATE + 2 * BURST}")
            handed = sum(int(x) for x in
                         re.findall(r"event=forwarder_stopped .*?handed_over=(\d+)",
                                                  g.a.text() + g.b.text()))
            if not handed:
                to.fail(f"{g.name}: no task handed over on the revokes (the queue was "
                        "not handed over, or the rebalances came after the drain)")
            lines.append(f"{g.name} ({g.delivery}): {len(want)} tasks at {RATE}/s through a "
                         f"join, a SIGTERM and a rolling restart: all arrived, none early, "
                         f"duplicates {dups}; busiest second {worst} (bound "
                         f"{RATE + 2 * BURST}); drained over {max(ts) - t_due} ms (the limit "
                         f"needs {1000 * (len(want) - BURST) // RATE}); cancels of {CANCELLED} "
                         f"queued tasks: all answered 0, none arrived; handed over on revokes "
                         f"{handed}")
        for g in groups:
            for f in (g.a, g.b):
                rc = f.stop()
                if rc not in (0, None) and f.proc:
                    to.fail(f"{f.name}: exit {rc} after SIGTERM")
        for line in lines:
            log(line)
        log("PASS")
        return 0
    except to.Failed as e:
        log(f"FAIL: {e}")
        for g in groups:
            log(f"logs: {g.a.log_path} {g.b.log_path}")
        return 1
    finally:
        st.cleanup([f for g in groups for f in (g.a, g.b)])


if __name__ == "__main__":
    sys.exit(main())
