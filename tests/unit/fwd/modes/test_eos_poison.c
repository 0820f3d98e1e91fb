/* SPDX-License-Identifier: Apache-2.0 */
/* Unit tests for exactly_once's poison isolation decisions
 * (kd_eos_poison.h): table-driven, each branch of each decision, on
 * plain structs (no forwarder, no broker, no clock but the one given). */
#include <stdio.h>

#include "kd_test.h"
#include "modes/kd_eos_poison.h"

#define E_RECORD  RD_KAFKA_RESP_ERR_INVALID_RECORD
#define E_TARGET  RD_KAFKA_RESP_ERR_TOPIC_AUTHORIZATION_FAILED
#define E_CLUSTER RD_KAFKA_RESP_ERR__MSG_TIMED_OUT
#define E_STATE   RD_KAFKA_RESP_ERR__STATE
#define E_FAIL    RD_KAFKA_RESP_ERR__FAIL
#define E_PURGED  RD_KAFKA_RESP_ERR__PURGE_QUEUE

static void test_solo_needed(void)
{
        static const struct {
                int aborts, solo_tries;
                rd_kafka_resp_err_t err;
                int want;
        } rows[] = {
            {0, 0, 0, 0},         /* nothing aborted */
            {0, 1, 0, 1},         /* alone before: alone again */
            {1, 0, E_RECORD, 1},  /* a record named: at once */
            {1, 0, E_TARGET, 1},  /* its target named: at once */
            {4, 0, E_CLUSTER, 0}, /* any other cause: not yet */
            {KD_SOLO_AFTER_ABORTS, 0, E_CLUSTER, 1}, /* ... then */
            {KD_SOLO_AFTER_ABORTS - 1, 0, E_STATE, 0},
        };
        CU_ASSERT_FALSE(kd_eos_solo_needed(NULL));
        for (size_t i = 0; i < sizeof(rows) / sizeof(rows[0]); i++) {
                kd_poison_entry_t e = {.key = 7,
                                       .aborts = rows[i].aborts,
                                       .solo_tries = rows[i].solo_tries,
                                       .err = rows[i].err};
                if (kd_eos_solo_needed(&e) != rows[i].want)
                        fprintf(stderr, "solo_needed row %zu\n", i);
                CU_ASSERT_EQUAL(kd_eos_solo_needed(&e), rows[i].want);
        }
}

/* kd_eos_decide and kd_eos_alone, every branch: a view of the
 * transaction, the record's entry (has_e 0: none) and its group's first
 * (has_first 0: none), and the decision. */
static void test_decide(void)
{
        enum { NOW = 100000 };
        static const struct {
                const char *what;
                kd_eos_view_t v;
                int has_e;
                kd_poison_entry_t e;
                int has_first;
                kd_poison_entry_t first;
                kd_eos_act_t act;
                int wait_ms, own_txn;
        } rows[] = {
            {"a new producer is due, none open",
             {.txn_ready = 1, .reset_due = 1},
             0,
             {0},
             0,
             {0},
             KD_EOS_WAIT,
             KD_SOLO_WAIT_MS,
             0},
            {"a new producer is due, one open: on",
             {.txn_open = 1, .members = 3, .reset_due = 1},
             0,
             {0},
             0,
             {0},
             KD_EOS_SHARED,
             0,
             0},
            {"a record is alone in the open one",
             {.txn_open = 1, .busy = 1},
             1,
             {.key = 1, .aborts = 1, .err = E_RECORD},
             0,
             {0},
             KD_EOS_WAIT,
             KD_SOLO_WAIT_MS,
             0},
            {"a known refusal with no entry",
             {.txn_ready = 1, .known_refusal = 1},
             0,
             {0},
             0,
             {0},
             KD_EOS_KNOWN,
             0,
             0},
            {"a known refusal whose entry needs it alone already",
             {.txn_open = 1, .known_refusal = 1},
             1,
             {.key = 1, .aborts = 1, .err = E_RECORD},
             0,
             {0},
             KD_EOS_ALONE,
             0,
             0},
            {"a refused batch's record, nothing in flight",
             {.txn_open = 1, .members = 4},
             1,
             {.key = 1, .aborts = 1, .err = E_RECORD},
             0,
             {0},
             KD_EOS_ALONE,
             0,
             0},
            {"a refused batch's record, produces in flight",
             {.txn_open = 1, .members = 4, .inflight = 1},
             1,
             {.key = 1, .aborts = 1, .err = E_RECORD},
             0,
             {0},
             KD_EOS_TURN,
             KD_SOLO_WAIT_MS,
             0},
            {"its group's first has yet to go alone",
             {.txn_open = 1},
             1,
             {.key = 1,
              .first = 2,
              .group = 9,
              .first_until = NOW + 1,
              .aborts = 1,
              .err = E_RECORD},
             1,
             {.key = 2, .group = 9},
             KD_EOS_WAIT,
             KD_SOLO_WAIT_MS,
             0},
            {"its group's first went alone",
             {.txn_open = 1},
             1,
             {.key = 1,
              .first = 2,
              .group = 9,
              .first_until = NOW + 1,
              .aborts = 1,
              .err = E_RECORD},
             1,
             {.key = 2, .group = 9, .solo_tries = 1},
             KD_EOS_ALONE,
             0,
             0},
            {"the first is of another group now",
             {.txn_open = 1},
             1,
             {.key = 1,
              .first = 2,
              .group = 9,
              .first_until = NOW + 1,
              .aborts = 1,
              .err = E_RECORD},
             1,
             {.key = 2, .group = 10},
             KD_EOS_ALONE,
             0,
             0},
            {"the wait for the first is over",
             {.txn_open = 1},
             1,
             {.key = 1,
              .first = 2,
              .group = 9,
              .first_until = NOW,
              .aborts = 1,
              .err = E_RECORD},
             1,
             {.key = 2, .group = 9},
             KD_EOS_ALONE,
             0,
             0},
            {"a target's refusal: its retry waits",
             {.txn_ready = 1},
             1,
             {.key = 1,
              .aborts = 1,
              .err = E_TARGET,
              .not_before_mono = NOW + 40},
             0,
             {0},
             KD_EOS_WAIT,
             40,
             0},
            {"a target's refusal: its group's first goes first",
             {.txn_ready = 1},
             1,
             {.key = 1,
              .first = 2,
              .group = 9,
              .first_until = NOW + 1,
              .aborts = 1,
              .err = E_TARGET},
             1,
             {.key = 2, .group = 9},
             KD_EOS_WAIT,
             KD_SOLO_WAIT_MS,
             0},
            {"a target's refusal: others in the open one",
             {.txn_open = 1, .members = 2},
             1,
             {.key = 1, .aborts = 1, .err = E_TARGET},
             0,
             {0},
             KD_EOS_TURN,
             KD_SOLO_WAIT_MS,
             1},
            {"a target's refusal: the open one is empty",
             {.txn_open = 1},
             1,
             {.key = 1, .aborts = 1, .err = E_TARGET},
             0,
             {0},
             KD_EOS_SOLO,
             0,
             0},
            {"a target's refusal: none open",
             {.txn_ready = 1, .members = 2},
             1,
             {.key = 1, .aborts = 1, .err = E_TARGET},
             0,
             {0},
             KD_EOS_SOLO,
             0,
             0},
            {"often aborted, the open one committing",
             {0},
             1,
             {.key = 1, .aborts = KD_SOLO_AFTER_ABORTS, .err = E_CLUSTER},
             0,
             {0},
             KD_EOS_TURN,
             KD_SOLO_WAIT_MS,
             1},
            {"seldom aborted: shared",
             {.txn_open = 1, .members = 2},
             1,
             {.key = 1, .aborts = 1, .err = E_CLUSTER},
             0,
             {0},
             KD_EOS_SHARED,
             0,
             0},
            {"a record waits for its solo turn",
             {.txn_open = 1,
              .solo_wait = 5,
              .solo_wait_at = NOW - KD_SOLO_WAIT_MAX_MS + 1},
             0,
             {0},
             0,
             {0},
             KD_EOS_WAIT,
             KD_SOLO_WAIT_MS,
             0},
            {"its wait is over",
             {.txn_open = 1,
              .solo_wait = 5,
              .solo_wait_at = NOW - KD_SOLO_WAIT_MAX_MS},
             0,
             {0},
             0,
             {0},
             KD_EOS_SHARED,
             0,
             0},
            {"nothing to isolate",
             {.txn_ready = 1},
             0,
             {0},
             0,
             {0},
             KD_EOS_SHARED,
             0,
             0},
        };
        for (size_t i = 0; i < sizeof(rows) / sizeof(rows[0]); i++) {
                kd_eos_view_t v = rows[i].v;
                v.now = NOW;
                kd_eos_decision_t d =
                    kd_eos_decide(&v, rows[i].has_e ? &rows[i].e : NULL,
                                  rows[i].has_first ? &rows[i].first : NULL);
                int ok = d.act == rows[i].act && d.wait_ms == rows[i].wait_ms &&
                         d.own_txn == rows[i].own_txn;
                if (!ok)
                        fprintf(stderr,
                                "decide: %s: act=%d wait=%d own=%d, want "
                                "act=%d wait=%d own=%d\n",
                                rows[i].what, d.act, d.wait_ms, d.own_txn,
                                rows[i].act, rows[i].wait_ms, rows[i].own_txn);
                CU_ASSERT_TRUE(ok);
                CU_ASSERT_EQUAL(kd_eos_held_back(&v),
                                rows[i].act == KD_EOS_WAIT &&
                                    (v.busy || (v.reset_due && v.txn_ready)));
        }
        /* After KD_EOS_KNOWN the mode makes the entry, then asks
         * kd_eos_alone. */
        kd_eos_view_t v = {.txn_open = 1, .known_refusal = 1, .now = NOW};
        kd_poison_entry_t e = {.key = 1, .err = E_RECORD};
        CU_ASSERT_EQUAL(kd_eos_alone(&v, &e, NULL).act, KD_EOS_ALONE);
        v.inflight = 1;
        CU_ASSERT_EQUAL(kd_eos_alone(&v, &e, NULL).act, KD_EOS_TURN);
        CU_ASSERT_EQUAL(kd_eos_alone(&v, &e, NULL).own_txn, 0);
}

static void test_victim(void)
{
        static const struct {
                int forgiven, solo_tries, aborts;
                rd_kafka_resp_err_t err;
                int explained, possible, victim;
        } rows[] = {
            {1, 0, 1, E_RECORD, 0, 0, 1},  /* forgiven: nothing to ask */
            {0, 0, 1, E_RECORD, 1, 1, 1},  /* explained: a victim */
            {0, 0, 1, E_RECORD, 0, 1, 0},  /* not explained */
            {0, 1, 1, E_RECORD, 1, 0, 0},  /* went alone: not asked */
            {0, 0, 2, E_RECORD, 1, 0, 0},  /* aborted twice */
            {0, 0, 1, E_TARGET, 1, 0, 0},  /* its target refused */
            {0, 0, 1, E_CLUSTER, 1, 0, 0}, /* no refusal */
        };
        for (size_t i = 0; i < sizeof(rows) / sizeof(rows[0]); i++) {
                kd_poison_entry_t e = {.key = 1,
                                       .forgiven = rows[i].forgiven,
                                       .solo_tries = rows[i].solo_tries,
                                       .aborts = rows[i].aborts,
                                       .err = rows[i].err};
                int possible = kd_eos_victim_possible(&e);
                int victim = kd_eos_victim(&e, possible && rows[i].explained);
                if (possible != rows[i].possible || victim != rows[i].victim)
                        fprintf(stderr, "victim row %zu: %d %d\n", i, possible,
                                victim);
                CU_ASSERT_EQUAL(possible, rows[i].possible);
                CU_ASSERT_EQUAL(victim, rows[i].victim);
        }
}

static void test_solo_weight(void)
{
        enum { LIMIT = 3 };
        static const struct {
                rd_kafka_resp_err_t was, cause;
                int fatal;
                uint64_t seen, commits;
                int want;
        } rows[] = {
            {0, E_RECORD, 0, 0, 0, LIMIT},   /* refused itself: all */
            {0, E_TARGET, 0, 0, 0, 1},       /* its target refused it */
            {0, E_CLUSTER, 1, 0, 0, 1},      /* it broke the producer */
            {E_TARGET, E_STATE, 0, 0, 0, 1}, /* the state its refusal left */
            {E_RECORD, E_STATE, 0, 0, 0, 1},
            {E_CLUSTER, E_STATE, 0, 0, 5, 0}, /* the producer's own state */
            {0, E_CLUSTER, 0, 4, 5, 1},       /* others committed meanwhile */
            {0, E_CLUSTER, 0, 5, 5, 0},       /* nothing commits */
            {0, E_FAIL, 0, 4, 5, 1},
            {0, E_FAIL, 0, 5, 5, 0},
        };
        for (size_t i = 0; i < sizeof(rows) / sizeof(rows[0]); i++) {
                kd_poison_entry_t e = {
                    .key = 1, .err = rows[i].was, .commits_seen = rows[i].seen};
                int w = kd_eos_solo_weight(&e, rows[i].cause, rows[i].fatal,
                                           rows[i].commits, LIMIT);
                if (w != rows[i].want)
                        fprintf(stderr, "solo_weight row %zu: %d\n", i, w);
                CU_ASSERT_EQUAL(w, rows[i].want);
        }
}

static void test_reasons_backoff_causes(void)
{
        static const struct {
                rd_kafka_resp_err_t was, cause, reason;
        } reasons[] = {
            {E_RECORD, E_STATE, E_RECORD}, /* a named one stays */
            {E_TARGET, E_CLUSTER, E_TARGET},
            {E_CLUSTER, E_STATE, E_STATE},  /* a vague one is replaced */
            {E_RECORD, E_TARGET, E_TARGET}, /* by a named one too */
            {0, E_FAIL, E_FAIL},
        };
        for (size_t i = 0; i < sizeof(reasons) / sizeof(reasons[0]); i++)
                CU_ASSERT_EQUAL(
                    kd_eos_solo_reason(reasons[i].was, reasons[i].cause),
                    reasons[i].reason);
        static const struct {
                int tries;
                int64_t max, want;
        } backoffs[] = {
            {0, 60000, KD_SOLO_BACKOFF_MS},
            {1, 60000, KD_SOLO_BACKOFF_MS},
            {2, 60000, 2 * KD_SOLO_BACKOFF_MS},
            {6, 60000, 32 * KD_SOLO_BACKOFF_MS},
            {40, 60000, 32 * KD_SOLO_BACKOFF_MS}, /* the doubling stops */
            {6, 1000, 1000},                      /* at most retry_max */
        };
        for (size_t i = 0; i < sizeof(backoffs) / sizeof(backoffs[0]); i++)
                CU_ASSERT_EQUAL(
                    kd_eos_solo_backoff(backoffs[i].tries, backoffs[i].max),
                    backoffs[i].want);
        static const struct {
                rd_kafka_resp_err_t cur, err, want;
        } causes[] = {
            {0, E_CLUSTER, E_CLUSTER},        /* the first error */
            {0, E_PURGED, 0},                 /* a purge is no cause */
            {E_CLUSTER, E_RECORD, E_CLUSTER}, /* the first stays */
            {E_STATE, E_RECORD, E_RECORD},    /* a refusal over the state */
            {E_STATE, E_TARGET, E_TARGET},
            {E_STATE, E_CLUSTER, E_STATE},
            {E_STATE, E_PURGED, E_STATE},
        };
        for (size_t i = 0; i < sizeof(causes) / sizeof(causes[0]); i++)
                CU_ASSERT_EQUAL(kd_eos_cause(causes[i].cur, causes[i].err),
                                causes[i].want);
        CU_ASSERT_TRUE(kd_eos_names_record(E_RECORD));
        CU_ASSERT_TRUE(kd_eos_names_record(E_TARGET));
        CU_ASSERT_FALSE(kd_eos_names_record(E_STATE));
        CU_ASSERT_FALSE(kd_eos_names_record(0));
}

/* Poison isolation's state (kd_eos_iso_t), changed only by its functions:
 * a record waits for its turn, goes alone, is refused alone (the culprit),
 * aborts its solo transaction; the transaction's cause; what is cleared
 * when a transaction is over. */
static void test_iso(void)
{
        static kd_eos_iso_t s; /* the table is large: not on the stack */
        enum { LIMIT = 3, RETRY_MAX = 60000 };
        kd_eos_view_t v = {0};

        /* The first to wait is the one waiting, until KD_SOLO_WAIT_MAX_MS. */
        CU_ASSERT_TRUE(kd_eos_iso_wait_turn(&s, 11, 1, 1000));
        CU_ASSERT_FALSE(kd_eos_iso_wait_turn(&s, 12, 0, 1001));
        CU_ASSERT_EQUAL(s.solo_wait, 11);
        CU_ASSERT_TRUE(
            kd_eos_iso_wait_turn(&s, 12, 0, 1000 + KD_SOLO_WAIT_MAX_MS));
        CU_ASSERT_EQUAL(s.solo_wait, 12);
        CU_ASSERT_EQUAL(s.solo_wait_txn, 0);
        kd_eos_iso_view(&s, &v);
        CU_ASSERT_EQUAL(v.solo_wait, 12);
        CU_ASSERT_EQUAL(v.solo_wait_at, 1000 + KD_SOLO_WAIT_MAX_MS);
        CU_ASSERT_FALSE(v.busy);

        /* It goes alone, a batch of its own: busy until its report. */
        kd_poison_entry_t *e = kd_poison_get(&s.poison, 12);
        kd_eos_iso_alone(&s, e, KD_EOS_ALONE);
        CU_ASSERT_EQUAL(s.alone, 12);
        CU_ASSERT_EQUAL(s.solo_wait, 0);
        CU_ASSERT_EQUAL(e->solo_tries, 1);
        kd_eos_iso_view(&s, &v);
        CU_ASSERT_TRUE(v.busy);
        kd_eos_iso_delivered(&s, 13); /* another's report */
        CU_ASSERT_EQUAL(s.alone, 12);
        kd_eos_iso_delivered(&s, 12);
        CU_ASSERT_EQUAL(s.alone, 0);

        /* Refused alone: the culprit, counted in full. */
        int oom = -1;
        kd_eos_iso_alone(&s, e, KD_EOS_ALONE);
        CU_ASSERT_PTR_EQUAL(kd_eos_iso_failed(&s, 12, 1, E_RECORD, LIMIT, &oom),
                            e);
        CU_ASSERT_EQUAL(oom, 0);
        CU_ASSERT_EQUAL(s.alone, 0);
        CU_ASSERT_EQUAL(e->solo_fails, LIMIT);
        CU_ASSERT_EQUAL(e->err, E_RECORD);
        CU_ASSERT_EQUAL(s.cause, E_RECORD);
        /* Not alone: no culprit; the first cause stays. */
        CU_ASSERT_PTR_NULL(kd_eos_iso_failed(&s, 14, 1, E_TARGET, LIMIT, &oom));
        CU_ASSERT_EQUAL(s.cause, E_RECORD);
        kd_eos_iso_over(&s);
        CU_ASSERT_EQUAL(s.cause, 0);

        /* The cause: the first error; a stored refusal over the state. */
        kd_eos_iso_cause(&s, E_STATE);
        kd_eos_iso_cause(&s, E_CLUSTER);
        CU_ASSERT_EQUAL(s.cause, E_STATE);
        CU_ASSERT_FALSE(kd_eos_iso_cause_named(&s));
        CU_ASSERT_FALSE(kd_eos_iso_learn_stored(&s, E_CLUSTER));
        CU_ASSERT_TRUE(kd_eos_iso_learn_stored(&s, E_TARGET));
        CU_ASSERT_EQUAL(s.cause, E_TARGET);
        CU_ASSERT_TRUE(kd_eos_iso_cause_named(&s));
        CU_ASSERT_FALSE(kd_eos_iso_learn_stored(&s, E_RECORD));
        kd_eos_iso_over(&s);

        /* A solo transaction aborts: counted, its next attempt waits. */
        kd_poison_entry_t *f = kd_poison_get(&s.poison, 21);
        kd_eos_iso_alone(&s, f, KD_EOS_SOLO);
        CU_ASSERT_EQUAL(s.solo, 21);
        kd_eos_iso_cause(&s, E_CLUSTER);
        kd_eos_solo_abort_t sa;
        CU_ASSERT_EQUAL(
            kd_eos_iso_aborted(&s, 0, 0, LIMIT, RETRY_MAX, 5000, &sa),
            E_CLUSTER);
        CU_ASSERT_PTR_EQUAL(sa.e, f);
        CU_ASSERT_EQUAL(sa.counted, f->solo_fails);
        CU_ASSERT_EQUAL(sa.backoff_ms, kd_eos_solo_backoff(1, RETRY_MAX));
        CU_ASSERT_EQUAL(f->not_before_mono, 5000 + sa.backoff_ms);
        kd_eos_iso_over(&s);
        CU_ASSERT_EQUAL(s.solo, 0);

        /* No cause seen: _FAIL; a journal record's failure counts none. */
        kd_eos_iso_alone(&s, f, KD_EOS_SOLO);
        int fails = f->solo_fails;
        CU_ASSERT_EQUAL(
            kd_eos_iso_aborted(&s, 1, 0, LIMIT, RETRY_MAX, 6000, &sa), E_FAIL);
        CU_ASSERT_PTR_NULL(sa.e);
        CU_ASSERT_EQUAL(f->solo_fails, fails);
        kd_eos_iso_over(&s);

        /* Committed: counted. */
        kd_eos_iso_committed(&s);
        CU_ASSERT_EQUAL(s.commits, 1);
        kd_eos_iso_destroy(&s);
}

int main(void)
{
        static const kd_test_case_t cases[] = {
            KD_TEST(test_solo_needed),
            KD_TEST(test_decide),
            KD_TEST(test_victim),
            KD_TEST(test_solo_weight),
            KD_TEST(test_reasons_backoff_causes),
            KD_TEST(test_iso),
            KD_TEST_END};
        return kd_test_run("eos_poison", cases, NULL, NULL);
}
