# SPDX-License-Identifier: Apache-2.0
"""Integration: a rate-limited target's backlog harms no other target
(issue 35, point 4). Both delivery modes at once, each with a forwarder of
its own on the stack's broker, forwarder.max_held=500.

Per mode, N_LIMITED tasks to a target limited to RATE/s come due at one
instant, and N_OTHER tasks to another target, not limited, come due one
by one over OTHER_SPAN_MS from the same instant, on the same tier
partitions. A rule's queue holds at most its rate times 10 s and its
burst (never more than max_held / 8): the rest of the backlog goes back
to a tier topic with its turn (kdelay-not-before) instead of holding
the held set, or in exactly_once the offset span, so the other target's
tasks are read and fired on time.

Asserted, per mode: every other-target task arrives, none early, the
latest within OTHER_LATE_MS of its fire-at; the limited target gets no
more than RATE + 2 * BURST in any second and nothing early; the
forwarder sent part of the backlog back (rate_deferred > 0, the
mechanism). Before, 1,000 limited tasks at 5/s with max_held=500 held
600 other tasks due over the next minute p50 38.3 s, max 97.9 s late.
The run ends before the backlog has drained (it needs N_LIMITED / RATE
seconds); its topics are deleted."""
import os
import re
import sys
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import test_outage as to  # noqa: E402  (Stack, Fwd: the forwarders and tools)
from test_rate_limit import busiest_second, joined, started  # noqa: E402
from confluent_kafka import Producer  # noqa: E402

RATE = 5
BURST = 1            # the default: a tenth of a second's worth, at least one
# The sizes (the suite's; a measurement may set them from the
# environment: KDELAY_BACKLOG_N, _OTHERS, _SPAN_MS, _MAX_HELD where
# "default" keeps the forwarder's own max_held).
ENV = os.environ.get
N_LIMITED = int(ENV("KDELAY_BACKLOG_N", "2000"))
N_OTHER = int(ENV("KDELAY_BACKLOG_OTHERS", "200"))
OTHER_SPAN_MS = int(ENV("KDELAY_BACKLOG_SPAN_MS", "20000"))
MAX_HELD = ENV("KDELAY_BACKLOG_MAX_HELD", "500")
OTHER_LATE_MS = 3000
DUE_IN_MS = 7000 + max(0, N_LIMITED - 2000) // 2  # time to schedule them
WATCH_MS = OTHER_SPAN_MS + 6000  # how long after the due instant arrivals are read
MODES = [("alo", "at_least_once"), ("eos", "exactly_once")]


def log(msg):
    print(f"test_rate_backlog: {msg}", flush=True)


def lateness(f, ids):
    late = sorted(min(f.arrived[t]) - f.fire_at[t] for t in ids if f.arrived.get(t))
    return late, (late[len(late) // 2] if late else -1,
                  late[min(len(late) - 1, len(late) * 99 // 100)] if late else -1,
                  late[-1] if late else -1)


def main():
    st = to.Stack()
    fwds = []
    for short, delivery in MODES:
        f = to.Fwd(st, f"bk{short}", delivery, "hold")
        f.limited = f"{f.prefix}.limited"
        f.extra = ["-X", f"forwarder.target_rate_limits={f.limited}={RATE}"]
        if MAX_HELD != "default":
            f.extra += ["-X", f"forwarder.max_held={MAX_HELD}"]
        fwds.append(f)
    try:
        st.sql(f"CREATE DATABASE `{st.db}`", db=False)
        fwds[0].ctl("db", "migrate")
        admin = to.AdminClient(st.kconf)
        for f in fwds:
            admin.create_topics([to.NewTopic(f.limited, 2, 1)])[f.limited].result(30)
            f.start()
        deadline = time.time() + 60
        for f in fwds:
            f.wait_assigned(deadline)
        producer = Producer({**st.kconf, "enable.idempotence": True, "acks": "all",
                             "linger.ms": 20})
        t_due = to.now_ms() + DUE_IN_MS
        tiers = to.pysched.parse_tiers(to.TIERS)
        for f in fwds:
            f.limited_ids, f.other_ids = [], []
            for i in range(N_LIMITED):
                tid = to.pysched.schedule(producer, f.prefix, tiers, f.limited, f"l{i}",
                                          b"v", t_due)
                f.fire_at[tid] = t_due
                f.limited_ids.append(tid)
            for i in range(N_OTHER):
                due = t_due + i * OTHER_SPAN_MS // N_OTHER
                tid = to.pysched.schedule(producer, f.prefix, tiers, f.target, f"o{i}",
                                          b"v", due)
                f.fire_at[tid] = due
                f.other_ids.append(tid)
        if producer.flush(60):
            to.fail("tasks not acknowledged in 60 s")
        if to.now_ms() > t_due - 1000:
            to.fail(f"scheduling took too long: {to.now_ms() - t_due + DUE_IN_MS} ms")

        # One reader per forwarder, of both its targets: consume() reads
        # each view's target into the arrivals they share.
        def views(f):
            g = to.Fwd(st, f.name, f.delivery, "hold")
            h = to.Fwd(st, f.name, f.delivery, "hold")
            g.target, h.target = f.target, f.limited
            g.arrived = h.arrived = f.arrived
            return [g, h]

        joined(started(lambda f: to.consume(st, views(f), t_due + WATCH_MS), fwds))
        lines = []
        for f in fwds:
            missing = [t for t in f.other_ids if not f.arrived.get(t)]
            if missing:
                to.fail(f"{f.name}: {len(missing)} of {N_OTHER} other-target tasks did not "
                        f"arrive within {WATCH_MS} ms")
            late, (p50, p99, mx) = lateness(f, f.other_ids)
            if late[0] < 0:
                to.fail(f"{f.name}: an other-target task arrived {-late[0]} ms early")
            if mx > OTHER_LATE_MS:
                to.fail(f"{f.name}: other-target tasks late p50 {p50} p99 {p99} max {mx} ms "
                        f"beside the backlog (bound {OTHER_LATE_MS} ms)")
            lts = [x for t in f.limited_ids for x in f.arrived.get(t, [])]
            if lts and min(lts) < t_due:
                to.fail(f"{f.name}: a limited task arrived early")
            worst = busiest_second(lts) if lts else 0
            if worst > RATE + 2 * BURST:
                to.fail(f"{f.name}: {worst} limited fires within one second "
                        f"(bound {RATE + 2 * BURST})")
            m = re.findall(r"event=stats .*?rate_deferred=(\d+)", f.text())
            deferred = int(m[-1]) if m else 0
            if not deferred:
                to.fail(f"{f.name}: rate_deferred 0: the backlog was not sent back")
            lines.append(f"{f.name} ({f.delivery}, max_held={MAX_HELD}): {N_LIMITED} tasks due at "
                         f"once at {RATE}/s beside {N_OTHER} others due over "
                         f"{OTHER_SPAN_MS // 1000} s: others late p50 {p50} p99 {p99} max "
                         f"{mx} ms, none early; limited arrived {len(lts)} in "
                         f"{WATCH_MS // 1000} s, busiest second {worst} (bound "
                         f"{RATE + 2 * BURST}); sent back to Kafka {deferred}")
        for f in fwds:
            rc = f.stop()
            if rc != 0:
                to.fail(f"{f.name}: exit {rc} after SIGTERM: {f.log_path}")
        for line in lines:
            log(line)
        log("PASS")
        return 0
    except to.Failed as e:
        log(f"FAIL: {e}")
        for f in fwds:
            log(f"{f.name} log: {f.log_path}")
        return 1
    finally:
        st.cleanup(fwds, [f.limited for f in fwds])


if __name__ == "__main__":
    sys.exit(main())
