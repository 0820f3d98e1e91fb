# SPDX-License-Identifier: Apache-2.0
"""Integration: a rate-limited target's backlog harms no other target
(issue 35, point 4; issue 43, point 1). Both delivery modes, each at
forwarder.max_held=500 and at the default, four forwarders at once on the
stack's broker, each with its own topics, at the default hold horizon
(30 s: a task sent back is read again long before its turn).

Per forwarder, N_LIMITED tasks to a target limited to RATE/s come due at
one instant; N_AT tasks to another target, not limited, come due at that
same instant, and N_OTHER more one by one over OTHER_SPAN_MS from
OTHER_FROM_MS after it, on the same tier partitions, scheduled after the
backlog (behind it in each partition). A rule holds at most its share of
the held set (and so of exactly_once's offset span): the rest of the
backlog goes back to a tier topic with its turn (kdelay-not-before), and
a task sent back is held again only when its turn is within what the
rule's share lets through, so the other target's tasks are read and
fired on time.

Asserted, per forwarder: every other-target task arrives, none early, the
latest within OTHER_LATE_MS of its fire-at (or of the moment the last
task was acknowledged, when a busy host took longer than DUE_IN_MS to
schedule them: that lateness is the harness's); the limited target gets
no more than RATE + BURST in any second (+1: the second is measured on
record timestamps, the broker's clock, not the forwarder's), nothing
early, and under exactly_once none twice; the forwarder sent part of the
backlog back (rate_deferred > 0, the mechanism) and its held set stayed
within max_held (the stats line's held_max) when its max_held is
small. OTHER_LATE_MS is 1000: on the dev stack the others were at most
146 ms late; the bound leaves a loaded 2-core CI host most of a second
(a resumed partition's fetch, a commit, a slow poll) without letting
the issue's seconds pass. Before (issue 43) the tasks sent back were read again
and held from 30 s before their turn, which refilled the held set: with
these sizes 22 of the 240 others had not arrived 27 s later at
max_held=500 (both modes); 600 tasks at 20/s (burst 5), max_held=400,
100 others over 10 s: max 8.6 s late (at_least_once). The run ends
before the backlog has drained (it needs N_LIMITED / RATE seconds; that
every limited task fires once is test_backlog_vt's, in virtual time);
its topics are deleted.

A measurement may set the sizes from the environment: KDELAY_BACKLOG_N,
_RATE, _BURST, _AT, _OTHERS, _FROM_MS, _SPAN_MS, _MAX_HELD (a comma list;
"default" keeps the forwarder's own), _MODES (alo,eos) and _HORIZON (a
forwarder.hold_horizon; "default" keeps the forwarder's own), and
KDELAY_TEST_TIERS the ladder (test_outage's 1s,10s,1m by default; the
issue's trials ran on the default ladder)."""
import os
import re
import sys
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import test_outage as to  # noqa: E402  (Stack, Fwd: the forwarders and tools)
from test_rate_limit import busiest_second, joined, started  # noqa: E402
from confluent_kafka import Producer  # noqa: E402

ENV = os.environ.get
RATE = int(ENV("KDELAY_BACKLOG_RATE", "20"))
# The default: a tenth of a second's worth, at least one.
BURST = int(ENV("KDELAY_BACKLOG_BURST", str(max(1, RATE // 10))))
N_LIMITED = int(ENV("KDELAY_BACKLOG_N", "2000"))
N_AT = int(ENV("KDELAY_BACKLOG_AT", "40"))
N_OTHER = int(ENV("KDELAY_BACKLOG_OTHERS", "200"))
OTHER_FROM_MS = int(ENV("KDELAY_BACKLOG_FROM_MS", "2000"))
OTHER_SPAN_MS = int(ENV("KDELAY_BACKLOG_SPAN_MS", "20000"))
MAX_HELDS = ENV("KDELAY_BACKLOG_MAX_HELD", "500,default").split(",")
HORIZON = ENV("KDELAY_BACKLOG_HORIZON", "default")
OTHER_LATE_MS = 1000
# The promise is RATE + BURST in any second; +1 for a second measured on
# record timestamps (the broker's clock) rather than the forwarder's.
RATE_BOUND = RATE + BURST + 1
DUE_IN_MS = 9000 + max(0, N_LIMITED - 2000) // 2  # time to schedule them
# How long after the due instant arrivals are read.
WATCH_MS = OTHER_FROM_MS + OTHER_SPAN_MS + 5000
MODES = [m for m in [("alo", "at_least_once"), ("eos", "exactly_once")]
         if m[0] in ENV("KDELAY_BACKLOG_MODES", "alo,eos").split(",")]


def log(msg):
    print(f"test_rate_backlog: {msg}", flush=True)


def lateness(f, ids):
    """Arrival less fire-at, or less the moment scheduling ended when that
    was later (f.ready_ms: a harness delay is not the forwarder's)."""
    late = sorted(min(f.arrived[t]) - max(f.fire_at[t], f.ready_ms)
                  for t in ids if f.arrived.get(t))
    return late, (late[len(late) // 2] if late else -1,
                  late[min(len(late) - 1, len(late) * 99 // 100)] if late else -1,
                  late[-1] if late else -1)


def forwarder(st, short, delivery, max_held):
    f = to.Fwd(st, f"bk{short}{'d' if max_held == 'default' else max_held}", delivery,
               "hold")
    f.limited = f"{f.prefix}.limited"
    f.max_held = max_held
    f.ready_ms = 0  # set after the flush (lateness())
    f.extra = ["-X", f"forwarder.target_rate_limits={f.limited}={RATE}/{BURST}"]
    # test_outage's forwarders hold 2 s ahead; the default holds 30 s, and
    # a task sent back is read again long before its turn.
    f.extra += ["-X", "forwarder.hold_horizon="
                + ("30s" if HORIZON == "default" else HORIZON)]
    if max_held != "default":
        f.extra += ["-X", f"forwarder.max_held={max_held}"]
    return f


def schedule(producer, f, t_due):
    """The backlog first, then the others: behind it in each partition."""
    tiers = to.pysched.parse_tiers(to.TIERS)
    f.limited_ids, f.other_ids = [], []
    for i in range(N_LIMITED):
        tid = to.pysched.schedule(producer, f.prefix, tiers, f.limited, f"l{i}", b"v",
                                  t_due)
        f.fire_at[tid] = t_due
        f.limited_ids.append(tid)
    dues = [t_due] * N_AT
    dues += [t_due + OTHER_FROM_MS + i * OTHER_SPAN_MS // max(1, N_OTHER)
             for i in range(N_OTHER)]
    for i, due in enumerate(dues):
        tid = to.pysched.schedule(producer, f.prefix, tiers, f.target, f"o{i}", b"v", due)
        f.fire_at[tid] = due
        f.other_ids.append(tid)


def verdict(f, t_due):
    """The forwarder's line; fails on a broken promise."""
    missing = [t for t in f.other_ids if not f.arrived.get(t)]
    if missing:
        to.fail(f"{f.name}: {len(missing)} of {len(f.other_ids)} other-target tasks did "
                f"not arrive within {WATCH_MS} ms")
    late, (p50, p99, mx) = lateness(f, f.other_ids)
    _, (_, _, mx_at) = lateness(f, f.other_ids[:N_AT])
    if late[0] < 0:
        to.fail(f"{f.name}: an other-target task arrived {-late[0]} ms early")
    if mx > OTHER_LATE_MS:
        to.fail(f"{f.name}: other-target tasks late p50 {p50} p99 {p99} max {mx} ms "
                f"(due at the instant: max {mx_at} ms) beside the backlog (bound "
                f"{OTHER_LATE_MS} ms)")
    lts = [x for t in f.limited_ids for x in f.arrived.get(t, [])]
    if lts and min(lts) < t_due:
        to.fail(f"{f.name}: a limited task arrived early")
    if f.delivery == "exactly_once":
        twice = [t for t in f.limited_ids if len(f.arrived.get(t, [])) > 1]
        if twice:
            to.fail(f"{f.name}: {len(twice)} limited tasks arrived more than once "
                    f"(e.g. {twice[0]})")
    worst = busiest_second(lts) if lts else 0
    if worst > RATE_BOUND:
        to.fail(f"{f.name}: {worst} limited fires within one second "
                f"(bound {RATE_BOUND})")
    text = f.text()
    m = re.findall(r"event=stats .*?rate_deferred=(\d+)", text)
    deferred = int(m[-1]) if m else 0
    m = re.findall(r"event=stats .*?held_max=(\d+)", text)
    held_max = int(m[-1]) if m else -1
    if not deferred and f.max_held != "default":
        to.fail(f"{f.name}: rate_deferred 0: the backlog was not sent back")
    if f.max_held != "default" and not 0 <= held_max <= int(f.max_held):
        to.fail(f"{f.name}: held_max {held_max} (max_held {f.max_held})")
    return (f"{f.name} ({f.delivery}, max_held={f.max_held}): {N_LIMITED} tasks due at "
            f"once at {RATE}/s beside {len(f.other_ids)} others ({N_AT} due at the same "
            f"instant, {N_OTHER} over {OTHER_SPAN_MS // 1000} s from "
            f"+{OTHER_FROM_MS} ms): others late p50 {p50} p99 {p99} max {mx} ms "
            f"(at the instant: max {mx_at} ms), none early; limited arrived {len(lts)} "
            f"in {WATCH_MS // 1000} s, busiest second {worst} (bound "
            f"{RATE_BOUND}); sent back to Kafka {deferred}, held at most "
            f"{held_max}")


def main():
    st = to.Stack()
    fwds = [forwarder(st, short, delivery, mh)
            for short, delivery in MODES for mh in MAX_HELDS]
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
        for f in fwds:
            schedule(producer, f, t_due)
        if producer.flush(60):
            to.fail("tasks not acknowledged in 60 s")
        # The clock starts after the flush: on a busy host scheduling may
        # take longer than DUE_IN_MS; the tasks due before it ended count
        # their lateness from then (the harness's delay, not a failure).
        ready = to.now_ms()
        if ready > t_due - 1000:
            log(f"scheduling took {ready - t_due + DUE_IN_MS} ms: lateness counted "
                f"from {ready - t_due} ms after the due instant")
        for f in fwds:
            f.ready_ms = ready if ready > t_due else 0
        watch_end = max(t_due, ready) + WATCH_MS

        # One reader per forwarder, of both its targets: consume() reads
        # each view's target into the arrivals they share.
        def views(f):
            g = to.Fwd(st, f.name, f.delivery, "hold")
            h = to.Fwd(st, f.name, f.delivery, "hold")
            g.target, h.target = f.target, f.limited
            g.arrived = h.arrived = f.arrived
            return [g, h]

        joined(started(lambda f: to.consume(st, views(f), watch_end), fwds))
        lines, failed = [], []
        for f in fwds:
            try:
                lines.append(verdict(f, t_due))
            except to.Failed as e:
                failed.append(str(e))
        for f in fwds:
            rc = f.stop()
            if rc != 0:
                failed.append(f"{f.name}: exit {rc} after SIGTERM: {f.log_path}")
        for line in lines:
            log(line)
        if failed:
            to.fail("; ".join(failed))
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
