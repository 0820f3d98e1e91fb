/* SPDX-License-Identifier: Apache-2.0 */
/* The run tracker (kd_runs.h): cases by hand, then seeded random
 * interleavings of assign, done, time, take, drop and restart checked
 * against a model that knows each seq's state and assign time: no run
 * covers a seq that was not DONE when taken, runs never overlap, a
 * parked seq was OPEN and old enough, no DONE seq is parked, a take
 * stalls only on a young OPEN seq, and every seq kd_runs_done promised a
 * run (KD_RUNS_RUN) is covered by one in the end.
 * KD_RUNS_SEED=n replays one seed. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "kd_test.h"
#include "pipeline/kd_runs.h"

#define MAXR 64

/* Takes with max runs into lo/hi: the count. */
static size_t take(kd_runs_t *r, int64_t now, uint64_t *lo, uint64_t *hi,
                   size_t max, uint64_t *parked)
{
        *parked = 0;
        return kd_runs_take(r, now, lo, hi, max, parked);
}

static void assign_n(kd_runs_t *r, uint64_t from, uint64_t to, int64_t now)
{
        for (uint64_t s = from; s <= to; s++)
                CU_ASSERT_EQUAL_FATAL(kd_runs_assign(r, s, now), 0);
}

/* Tasks settled in claim order: one run per flush, nothing parked. */
static void test_in_order_is_one_run(void)
{
        kd_runs_t *r = kd_runs_new("w1:0000abcd.1", 0);
        CU_ASSERT_PTR_NOT_NULL_FATAL(r);
        CU_ASSERT_STRING_EQUAL(kd_runs_prefix(r), "w1:0000abcd.1");
        uint64_t lo[MAXR], hi[MAXR], parked;
        assign_n(r, 1, 500, 0);
        for (uint64_t s = 1; s <= 500; s++)
                CU_ASSERT_EQUAL(kd_runs_done(r, s), KD_RUNS_RUN);
        CU_ASSERT_EQUAL(take(r, 250, lo, hi, MAXR, &parked), 1);
        CU_ASSERT_EQUAL(lo[0], 1);
        CU_ASSERT_EQUAL(hi[0], 500);
        CU_ASSERT_EQUAL(parked, 0);
        CU_ASSERT_EQUAL(kd_runs_waiting(r), 0);
        /* The next flush goes on from 501. */
        assign_n(r, 501, 510, 260);
        for (uint64_t s = 501; s <= 505; s++)
                kd_runs_done(r, s);
        CU_ASSERT_EQUAL(take(r, 500, lo, hi, MAXR, &parked), 1);
        CU_ASSERT_EQUAL(lo[0], 501);
        CU_ASSERT_EQUAL(hi[0], 505);
        CU_ASSERT_EQUAL(kd_runs_emitted(r), 505);
        CU_ASSERT_EQUAL(kd_runs_waiting(r), 5);
        /* Nothing new DONE: nothing taken. */
        CU_ASSERT_EQUAL(take(r, 750, lo, hi, MAXR, &parked), 0);
        kd_runs_free(r);
}

/* An OPEN seq holds the runs behind it until it is done, or until it is
 * KD_RUN_PARK_MS old: then it is parked and the runs go around it. */
static void test_open_seq_stalls_then_is_parked(void)
{
        kd_runs_t *r = kd_runs_new("p", 100);
        uint64_t lo[MAXR], hi[MAXR], parked;
        assign_n(r, 101, 105, 0);
        kd_runs_done(r, 102);
        kd_runs_done(r, 103);
        kd_runs_done(r, 105);
        CU_ASSERT_EQUAL(take(r, KD_RUN_PARK_MS - 1, lo, hi, MAXR, &parked), 0);
        CU_ASSERT_EQUAL(parked, 0);
        CU_ASSERT_EQUAL(kd_runs_emitted(r), 100);
        /* 101 and 104 are a second old: parked, never covered. */
        CU_ASSERT_EQUAL(take(r, KD_RUN_PARK_MS, lo, hi, MAXR, &parked), 2);
        CU_ASSERT_EQUAL(lo[0], 102);
        CU_ASSERT_EQUAL(hi[0], 103);
        CU_ASSERT_EQUAL(lo[1], 105);
        CU_ASSERT_EQUAL(hi[1], 105);
        CU_ASSERT_EQUAL(parked, 2);
        /* Their tasks, delivered late, are told to mark alone. */
        CU_ASSERT_EQUAL(kd_runs_done(r, 101), KD_RUNS_PARKED);
        CU_ASSERT_EQUAL(kd_runs_done(r, 104), KD_RUNS_PARKED);
        /* An OPEN seq done before the park is covered after all. */
        assign_n(r, 106, 107, 2000);
        kd_runs_done(r, 107);
        CU_ASSERT_EQUAL(take(r, 2100, lo, hi, MAXR, &parked), 0);
        CU_ASSERT_EQUAL(kd_runs_done(r, 106), KD_RUNS_RUN);
        CU_ASSERT_EQUAL(take(r, 2200, lo, hi, MAXR, &parked), 1);
        CU_ASSERT_EQUAL(lo[0], 106);
        CU_ASSERT_EQUAL(hi[0], 107);
        kd_runs_free(r);
}

/* A seq is parked no earlier than KD_RUN_PARK_MS after its own assign,
 * and no later than KD_RUNS_SLICE_MS after that. */
static void test_park_time_bounds(void)
{
        kd_runs_t *r = kd_runs_new("p", 0);
        uint64_t lo[MAXR], hi[MAXR], parked;
        CU_ASSERT_EQUAL(kd_runs_assign(r, 1, 1000), 0);
        CU_ASSERT_EQUAL(kd_runs_assign(r, 2, 1010), 0); /* the same slice */
        CU_ASSERT_EQUAL(kd_runs_assign(r, 3, 1500), 0); /* a later one */
        kd_runs_done(r, 3);
        /* 1 is old enough at 2000, 2 not until 2010: the slice waits. */
        take(r, 2009, lo, hi, MAXR, &parked);
        CU_ASSERT_EQUAL(parked, 0);
        CU_ASSERT_EQUAL(kd_runs_emitted(r), 0);
        CU_ASSERT_EQUAL(take(r, 2010, lo, hi, MAXR, &parked), 1);
        CU_ASSERT_EQUAL(parked, 2);
        CU_ASSERT_EQUAL(lo[0], 3);
        CU_ASSERT_EQUAL(kd_runs_emitted(r), 3);
        /* Within a slice's length: parked by then. */
        for (int64_t t = 3000; t < 3000 + KD_RUNS_SLICE_MS; t++)
                CU_ASSERT_EQUAL(kd_runs_assign(r, (uint64_t)(t - 2996), t), 0);
        take(r, 3000 + KD_RUN_PARK_MS + KD_RUNS_SLICE_MS - 1, lo, hi, MAXR,
             &parked);
        CU_ASSERT_EQUAL(parked, KD_RUNS_SLICE_MS);
        CU_ASSERT_EQUAL(kd_runs_waiting(r), 0);
        kd_runs_free(r);
}

/* A now older than the last assign's counts as the last's: a seq is
 * never parked early for it. */
/* A longer park time (kd_runs_set_park: claim_ahead, a transaction's
 * interval): an OPEN seq waits that long, and never less than the
 * default; the slices scale with it. */
static void test_a_longer_park_time(void)
{
        kd_runs_t *r = kd_runs_new("p", 0);
        uint64_t lo[MAXR], hi[MAXR], parked;
        kd_runs_set_park(r, 10);
        CU_ASSERT_EQUAL(kd_runs_park_ms(r), KD_RUN_PARK_MS);
        kd_runs_set_park(r, 3000);
        CU_ASSERT_EQUAL(kd_runs_park_ms(r), 3000);
        assign_n(r, 1, 3, 0);
        kd_runs_done(r, 2);
        kd_runs_done(r, 3);
        CU_ASSERT_EQUAL(take(r, 2999, lo, hi, MAXR, &parked), 0);
        CU_ASSERT_EQUAL(parked, 0);
        CU_ASSERT_EQUAL(take(r, 3000, lo, hi, MAXR, &parked), 1);
        CU_ASSERT_EQUAL(parked, 1);
        CU_ASSERT_EQUAL(lo[0], 2);
        CU_ASSERT_EQUAL(hi[0], 3);
        /* Assigns over 5 s, one a ms: slices of 96 ms keep up. */
        for (uint64_t s = 4; s < 5004; s++)
                CU_ASSERT_EQUAL(kd_runs_assign(r, s, 10000 + (int64_t)s), 0);
        CU_ASSERT_EQUAL(
            take(r, 10000 + 5003 + 3000 + 96, lo, hi, MAXR, &parked), 0);
        CU_ASSERT_EQUAL(parked, 5000);
        kd_runs_free(r);
}

static void test_time_never_goes_back(void)
{
        kd_runs_t *r = kd_runs_new("p", 0);
        uint64_t lo[MAXR], hi[MAXR], parked;
        CU_ASSERT_EQUAL(kd_runs_assign(r, 1, 1000), 0);
        CU_ASSERT_EQUAL(kd_runs_assign(r, 2, 500), 0);
        take(r, 1999, lo, hi, MAXR, &parked);
        CU_ASSERT_EQUAL(parked, 0);
        take(r, 2000, lo, hi, MAXR, &parked);
        CU_ASSERT_EQUAL(parked, 2);
        kd_runs_free(r);
}

/* Seqs never assigned (a claim's token not given) own no row: DONE. */
static void test_skipped_seqs_are_done(void)
{
        kd_runs_t *r = kd_runs_new("p", 0);
        uint64_t lo[MAXR], hi[MAXR], parked;
        assign_n(r, 1, 2, 0);
        CU_ASSERT_EQUAL(kd_runs_assign(r, 5, 0), 0); /* 3, 4 skipped */
        kd_runs_done(r, 1);
        kd_runs_done(r, 2);
        CU_ASSERT_EQUAL(take(r, 10, lo, hi, MAXR, &parked), 1);
        CU_ASSERT_EQUAL(hi[0], 4);
        kd_runs_done(r, 5);
        CU_ASSERT_EQUAL(take(r, 20, lo, hi, MAXR, &parked), 1);
        CU_ASSERT_EQUAL(lo[0], 5);
        CU_ASSERT_EQUAL(hi[0], 5);
        /* Nothing waiting: a skip is passed over, not covered. */
        CU_ASSERT_EQUAL(kd_runs_assign(r, 9, 30), 0);
        CU_ASSERT_EQUAL(kd_runs_emitted(r), 8);
        CU_ASSERT_EQUAL(kd_runs_done(r, 7), KD_RUNS_PARKED);
        /* Not assigned yet: no run promised. */
        CU_ASSERT_EQUAL(kd_runs_done(r, 10), KD_RUNS_PARKED);
        CU_ASSERT_EQUAL(kd_runs_done(r, 9), KD_RUNS_RUN);
        CU_ASSERT_EQUAL(take(r, 40, lo, hi, MAXR, &parked), 1);
        CU_ASSERT_EQUAL(lo[0], 9);
        kd_runs_free(r);
}

/* At most max runs per take; the next take goes on. */
static void test_max_runs_per_take(void)
{
        kd_runs_t *r = kd_runs_new("p", 0);
        uint64_t lo[MAXR], hi[MAXR], parked;
        assign_n(r, 1, 9, 0);
        for (uint64_t s = 1; s <= 9; s++)
                if (s % 2)
                        kd_runs_done(r, s); /* 2, 4, 6, 8 OPEN */
        CU_ASSERT_EQUAL(take(r, KD_RUN_PARK_MS, lo, hi, 2, &parked), 2);
        CU_ASSERT_EQUAL(hi[1], 3);
        CU_ASSERT_EQUAL(parked, 2); /* 2, and 4 before the third run */
        CU_ASSERT_EQUAL(take(r, KD_RUN_PARK_MS, lo, hi, 2, &parked), 2);
        CU_ASSERT_EQUAL(lo[0], 5);
        CU_ASSERT_EQUAL(lo[1], 7);
        CU_ASSERT_EQUAL(take(r, KD_RUN_PARK_MS, lo, hi, 2, &parked), 1);
        CU_ASSERT_EQUAL(lo[0], 9);
        CU_ASSERT_EQUAL(kd_runs_waiting(r), 0);
        kd_runs_free(r);
}

/* A revoke or a new generation: DONE seqs still covered, every OPEN one
 * parked at once; then the next generation, whose first seq follows. */
static void test_drop_then_restart(void)
{
        kd_runs_t *r = kd_runs_new("a:1.1", 0);
        uint64_t lo[MAXR], hi[MAXR], parked = 0;
        assign_n(r, 1, 6, 0);
        kd_runs_done(r, 2);
        kd_runs_done(r, 3);
        kd_runs_done(r, 6);
        CU_ASSERT_EQUAL(kd_runs_drop(r, lo, hi, 1, &parked), 1);
        CU_ASSERT_EQUAL(lo[0], 2);
        CU_ASSERT_EQUAL(hi[0], 3);
        CU_ASSERT_EQUAL(kd_runs_drop(r, lo, hi, 1, &parked), 1);
        CU_ASSERT_EQUAL(lo[0], 6);
        CU_ASSERT_EQUAL(kd_runs_drop(r, lo, hi, 1, &parked), 0);
        CU_ASSERT_EQUAL(parked, 3); /* 1, 4, 5 */
        CU_ASSERT_EQUAL(kd_runs_waiting(r), 0);
        CU_ASSERT_EQUAL(kd_runs_restart(r, "a:1.2", 6), 0);
        CU_ASSERT_STRING_EQUAL(kd_runs_prefix(r), "a:1.2");
        /* The old generation's tasks mark alone. */
        CU_ASSERT_EQUAL(kd_runs_done(r, 4), KD_RUNS_PARKED);
        assign_n(r, 7, 8, 10);
        kd_runs_done(r, 7);
        kd_runs_done(r, 8);
        CU_ASSERT_EQUAL(take(r, 20, lo, hi, MAXR, &parked), 1);
        CU_ASSERT_EQUAL(lo[0], 7);
        CU_ASSERT_EQUAL(hi[0], 8);
        kd_runs_free(r);
}

/* Refusals change nothing. */
static void test_refusals(void)
{
        char longp[KD_RUNS_PREFIX_MAX + 1];
        memset(longp, 'x', sizeof(longp) - 1);
        longp[sizeof(longp) - 1] = '\0';
        CU_ASSERT_PTR_NULL(kd_runs_new(longp, 0));
        longp[KD_RUNS_PREFIX_MAX - 1] = '\0'; /* 64 characters: fits */
        kd_runs_t *r = kd_runs_new(longp, 0);
        CU_ASSERT_PTR_NOT_NULL_FATAL(r);
        longp[KD_RUNS_PREFIX_MAX - 1] = 'x';
        CU_ASSERT_EQUAL(kd_runs_restart(r, longp, 0), -1);
        CU_ASSERT_EQUAL(strlen(kd_runs_prefix(r)), KD_RUNS_PREFIX_MAX - 1);
        CU_ASSERT_EQUAL(kd_runs_assign(r, 1, 0), 0);
        CU_ASSERT_EQUAL(kd_runs_assign(r, 1, 0), -1); /* not above */
        /* A window past KD_RUNS_WINDOW_MAX: refused, nothing changed (the
         * bitmap is not grown for it). */
        size_t bytes = kd_runs_bytes(r);
        CU_ASSERT_EQUAL(kd_runs_assign(r, 2 + KD_RUNS_WINDOW_MAX, 0), -1);
        CU_ASSERT_EQUAL(kd_runs_last(r), 1);
        CU_ASSERT_EQUAL(kd_runs_emitted(r), 0);
        CU_ASSERT_EQUAL(kd_runs_bytes(r), bytes);
        CU_ASSERT_EQUAL(kd_runs_assign(r, 2, 0), 0);
        kd_runs_free(r);
        kd_runs_free(NULL);
}

/* The bitmap grows with the window (a stalled flush), keeps every bit
 * through the move, and is one bit per seq. */
static void test_window_grows(void)
{
        kd_runs_t *r = kd_runs_new("p", 37); /* mid-word */
        uint64_t lo[MAXR], hi[MAXR], parked;
        const uint64_t top = 100999;
        assign_n(r, 38, top, 0);
        CU_ASSERT(kd_runs_bytes(r) >= (top - 37) / 8);
        CU_ASSERT(kd_runs_bytes(r) <= (top - 37) / 8 * 2 + 2048);
        for (uint64_t s = 38; s <= top; s++)
                if (s % 1000)
                        kd_runs_done(r, s);
        size_t k = take(r, 10, lo, hi, MAXR, &parked);
        CU_ASSERT_EQUAL(k, 1);
        CU_ASSERT_EQUAL(lo[0], 38);
        CU_ASSERT_EQUAL(hi[0], 999);
        /* A second on: each multiple of 1000 parked, the rest in runs,
         * MAXR runs a take. */
        uint64_t next = 1001, runs = 0;
        while ((k = take(r, KD_RUN_PARK_MS, lo, hi, MAXR, &parked)) > 0)
                for (size_t i = 0; i < k; i++, runs++) {
                        CU_ASSERT_EQUAL(lo[i], next);
                        next += 1000;
                        CU_ASSERT_EQUAL(hi[i], next - 2);
                }
        CU_ASSERT_EQUAL(runs, 100);
        CU_ASSERT_EQUAL(kd_runs_emitted(r), top);
        kd_runs_free(r);
}

/* --- the random interleavings against a model ------------------------ */

enum { M_GAP, M_OPEN, M_DONE, M_COVERED, M_PARKED };

typedef struct model {
        unsigned char *st;        /* per seq */
        int64_t *at;              /* OPEN: its assign time */
        unsigned char *promised;  /* kd_runs_done said KD_RUNS_RUN */
        unsigned char *abandoned; /* its task will never be done */
        unsigned char *told;      /* kd_runs_done was called */
        uint64_t *open;           /* seqs in assign order, from o_head */
        size_t n_open, o_head;
        uint64_t last, emitted, size;
        int64_t now;
        uint64_t runs, parked, promised_n, alone_n, takes, drops;
        size_t max_window;
} model_t;

static unsigned rnd(unsigned *state)
{
        /* xorshift32 */
        unsigned x = *state;
        x ^= x << 13;
        x ^= x >> 17;
        x ^= x << 5;
        return *state = x;
}

/* Checks runs lo/hi (n of them, max asked) and the parks of one take or
 * drop (park_all) against the model, and moves it on. */
static void check_take(kd_runs_t *r, model_t *m, const uint64_t *lo,
                       const uint64_t *hi, size_t n, size_t max,
                       uint64_t parked, int park_all)
{
        uint64_t e = m->emitted, parked_seen = 0;
        /* Parked seqs before s: each OPEN and old enough, or never
         * assigned; never a DONE one. */
#define PARK_UPTO(s)                                                           \
        for (; e + 1 < (s); e++) {                                             \
                unsigned char st = m->st[e + 1];                               \
                CU_ASSERT_FATAL(st == M_OPEN || st == M_GAP);                  \
                if (st != M_OPEN)                                              \
                        continue;                                              \
                CU_ASSERT_FATAL(park_all ||                                    \
                                m->now - m->at[e + 1] >= KD_RUN_PARK_MS);      \
                m->st[e + 1] = M_PARKED;                                       \
                parked_seen++;                                                 \
        }
        CU_ASSERT_FATAL(n <= max);
        for (size_t i = 0; i < n; i++) {
                CU_ASSERT_FATAL(lo[i] > e);      /* no overlap, ascending */
                CU_ASSERT_FATAL(lo[i] <= hi[i]); /* not empty */
                CU_ASSERT_FATAL(hi[i] <= m->last);
                PARK_UPTO(lo[i]);
                for (uint64_t s = lo[i]; s <= hi[i]; s++) {
                        /* Never an OPEN seq. */
                        CU_ASSERT_FATAL(m->st[s] == M_DONE ||
                                        m->st[s] == M_GAP);
                        if (m->st[s] == M_DONE)
                                m->st[s] = M_COVERED;
                }
                e = hi[i];
                m->runs++;
        }
        uint64_t emitted = kd_runs_emitted(r);
        CU_ASSERT_FATAL(emitted >= e && emitted <= m->last);
        PARK_UPTO(emitted + 1);
#undef PARK_UPTO
        CU_ASSERT_FATAL(parked == parked_seen);
        m->parked += parked_seen;
        m->emitted = emitted;
        /* It stops only on a young OPEN seq, or when max runs are out. */
        if (emitted < m->last && n < max) {
                unsigned char st = m->st[emitted + 1];
                CU_ASSERT_FATAL(!park_all);
                CU_ASSERT_FATAL(st == M_OPEN);
                CU_ASSERT_FATAL(m->now - m->at[emitted + 1] <
                                KD_RUN_PARK_MS + KD_RUNS_SLICE_MS);
        }
        if (park_all && n < max)
                CU_ASSERT_FATAL(kd_runs_waiting(r) == 0);
}

static void step_assign(kd_runs_t *r, model_t *m, unsigned *rs)
{
        uint64_t skip = rnd(rs) % 20 == 0 ? rnd(rs) % 3 + 1 : 0;
        uint64_t seq = m->last + 1 + skip;
        if (seq >= m->size)
                return;
        int empty = m->emitted == m->last;
        CU_ASSERT_EQUAL_FATAL(kd_runs_assign(r, seq, m->now), 0);
        m->st[seq] = M_OPEN;
        m->at[seq] = m->now;
        m->open[m->n_open++] = seq;
        m->last = seq;
        /* Nothing waiting: the skip is passed over. */
        CU_ASSERT_EQUAL_FATAL(kd_runs_emitted(r), empty ? seq - 1 : m->emitted);
        m->emitted = kd_runs_emitted(r);
        if (m->last - m->emitted > m->max_window)
                m->max_window = m->last - m->emitted;
}

static void step_done(kd_runs_t *r, model_t *m, unsigned *rs)
{
        /* The oldest live task mostly, else one of the next 64, now and
         * then any. open[] is in assign order; entries done or abandoned
         * are passed over (and dropped from the front). */
        while (m->o_head < m->n_open && (m->told[m->open[m->o_head]] ||
                                         m->abandoned[m->open[m->o_head]]))
                m->o_head++;
        size_t live = m->n_open - m->o_head;
        if (!live)
                return;
        unsigned how = rnd(rs) % 20;
        size_t i = m->o_head;
        if (how >= 15)
                i += rnd(rs) % (live < 64 ? live : 64);
        if (how == 19)
                i = m->o_head + rnd(rs) % live;
        uint64_t seq = m->open[i];
        if (m->told[seq] || m->abandoned[seq])
                return; /* finished already */
        if (rnd(rs) % 50 == 0) {
                m->abandoned[seq] = 1; /* revoked, lost: never done */
                return;
        }
        kd_runs_cover_t c = kd_runs_done(r, seq);
        m->told[seq] = 1;
        if (seq > m->emitted) {
                CU_ASSERT_FATAL(m->st[seq] == M_OPEN);
                CU_ASSERT_EQUAL_FATAL(c, KD_RUNS_RUN);
                m->st[seq] = M_DONE;
                m->promised[seq] = 1;
                m->promised_n++;
        } else {
                /* Parked, or of an earlier generation: marks alone. */
                CU_ASSERT_FATAL(m->st[seq] == M_PARKED);
                CU_ASSERT_EQUAL_FATAL(c, KD_RUNS_PARKED);
                m->alone_n++;
        }
}

static void step_take(kd_runs_t *r, model_t *m, unsigned *rs)
{
        uint64_t lo[8], hi[8], parked = 0;
        size_t max = 1 + rnd(rs) % 8;
        size_t n = kd_runs_take(r, m->now, lo, hi, max, &parked);
        check_take(r, m, lo, hi, n, max, parked, 0);
        m->takes++;
}

/* A new generation: drained to empty, restarted after the last seq. */
static void step_generation(kd_runs_t *r, model_t *m, unsigned *rs)
{
        uint64_t lo[3], hi[3];
        size_t n;
        do {
                uint64_t parked = 0;
                n = kd_runs_drop(r, lo, hi, 3, &parked);
                check_take(r, m, lo, hi, n, 3, parked, 1);
        } while (n == 3);
        CU_ASSERT_EQUAL_FATAL(kd_runs_waiting(r), 0);
        char prefix[32];
        snprintf(prefix, sizeof(prefix), "t:%08x.%u", rnd(rs),
                 (unsigned)m->drops);
        CU_ASSERT_EQUAL_FATAL(kd_runs_restart(r, prefix, m->last), 0);
        /* Every old seq is emitted or parked now; live tasks from the
         * old generation (kept partitions) go on and mark alone. */
        m->drops++;
}

static void run_seed(unsigned seed, int steps)
{
        unsigned rs = seed ? seed : 1;
        model_t m = {0};
        m.size = (uint64_t)steps * 60 + 16;
        m.st = calloc(m.size, 1);
        m.promised = calloc(m.size, 1);
        m.at = calloc(m.size, sizeof(*m.at));
        m.open = calloc(m.size, sizeof(*m.open));
        m.abandoned = calloc(m.size, 1);
        m.told = calloc(m.size, 1);
        CU_ASSERT_FATAL(m.st && m.promised && m.at && m.open && m.abandoned &&
                        m.told);
        m.now = 1000000;
        kd_runs_t *r = kd_runs_new("t:00000000.0", 0);
        CU_ASSERT_PTR_NOT_NULL_FATAL(r);
        for (int k = 0; k < steps; k++) {
                unsigned op = rnd(&rs) % 1000;
                if (op < 330)
                        step_assign(r, &m, &rs);
                else if (op < 700)
                        step_done(r, &m, &rs);
                else if (op < 900)
                        m.now += rnd(&rs) % 40; /* a turn of the loop */
                else if (op < 902)
                        m.now += 1000 + rnd(&rs) % 1500; /* a stall */
                else if (op < 990)
                        step_take(r, &m, &rs);
                else if (op < 993) /* a claim batch answered at once */
                        for (unsigned b = 200 + rnd(&rs) % 3000; b > 0; b--)
                                step_assign(r, &m, &rs);
                else if (op < 996) /* a batch of fires delivered */
                        for (unsigned b = 200 + rnd(&rs) % 4000; b > 0; b--)
                                step_done(r, &m, &rs);
                else if (op < 999)
                        m.now += KD_RUN_PARK_MS - 20 + rnd(&rs) % 60;
                else
                        step_generation(r, &m, &rs);
        }
        /* The stop: everything DONE gets its run. */
        step_generation(r, &m, &rs);
        uint64_t uncovered = 0;
        for (uint64_t s = 1; s <= m.last; s++)
                if (m.promised[s] && m.st[s] != M_COVERED)
                        uncovered++;
        CU_ASSERT_EQUAL(uncovered, 0);
        /* One bit per seq of the widest window, doubled at most. */
        CU_ASSERT(kd_runs_bytes(r) <= 2048 + (m.max_window / 64 + 2) * 8 * 2);
        printf("\n  seed=%u steps=%d seqs=%llu runs=%llu promised=%llu "
               "parked=%llu marked_alone=%llu takes=%llu generations=%llu "
               "max_window=%zu bytes=%zu",
               seed, steps, (unsigned long long)m.last,
               (unsigned long long)m.runs, (unsigned long long)m.promised_n,
               (unsigned long long)m.parked, (unsigned long long)m.alone_n,
               (unsigned long long)m.takes, (unsigned long long)m.drops,
               m.max_window, kd_runs_bytes(r));
        /* The run did exercise each path. */
        CU_ASSERT(m.runs > 0 && m.parked > 0 && m.alone_n > 0 && m.drops > 0);
        kd_runs_free(r);
        free(m.st);
        free(m.promised);
        free(m.at);
        free(m.open);
        free(m.abandoned);
        free(m.told);
}

static void test_random_against_model(void)
{
        const char *env = getenv("KD_RUNS_SEED");
        if (env && *env) {
                run_seed((unsigned)strtoul(env, NULL, 10), 200000);
                return;
        }
        static const unsigned seeds[] = {1, 44, 2026, 0xdecade, 987654321};
        for (size_t i = 0; i < sizeof(seeds) / sizeof(*seeds); i++)
                run_seed(seeds[i], 40000);
}

int main(void)
{
        static const kd_test_case_t cases[] = {
            KD_TEST(test_in_order_is_one_run),
            KD_TEST(test_open_seq_stalls_then_is_parked),
            KD_TEST(test_park_time_bounds),
            KD_TEST(test_a_longer_park_time),
            KD_TEST(test_time_never_goes_back),
            KD_TEST(test_skipped_seqs_are_done),
            KD_TEST(test_max_runs_per_take),
            KD_TEST(test_drop_then_restart),
            KD_TEST(test_refusals),
            KD_TEST(test_window_grows),
            KD_TEST(test_random_against_model),
            KD_TEST_END};
        return kd_test_run("runs", cases, NULL, NULL);
}
