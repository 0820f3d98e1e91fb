/* SPDX-License-Identifier: Apache-2.0 */
/* Unit tests for the forwarder's produce error classes (kd_perr.h), the
 * records of aborted transactions (kd_poison.h) and what targets refuse
 * (kd_refusals.h). */
#include <stdlib.h>
#include <string.h>

#include <kdelay/kdelay.h>

#include "core/kd_part.h"
#include "core/kd_perr.h"
#include "core/kd_refusals.h"
#include "kd_test.h"
#include "modes/kd_poison.h"

static void test_error_classes_and_reasons(void)
{
        CU_ASSERT_EQUAL(kd_perr_class(RD_KAFKA_RESP_ERR_INVALID_RECORD),
                        KD_PERR_RECORD);
        CU_ASSERT_EQUAL(kd_perr_class(RD_KAFKA_RESP_ERR_MSG_SIZE_TOO_LARGE),
                        KD_PERR_RECORD);
        CU_ASSERT_EQUAL(
            kd_perr_class(RD_KAFKA_RESP_ERR_TOPIC_AUTHORIZATION_FAILED),
            KD_PERR_TARGET);
        CU_ASSERT_EQUAL(kd_perr_class(RD_KAFKA_RESP_ERR__UNKNOWN_TOPIC),
                        KD_PERR_TARGET);
        CU_ASSERT_EQUAL(kd_perr_class(RD_KAFKA_RESP_ERR__PURGE_QUEUE),
                        KD_PERR_PURGED);
        CU_ASSERT_EQUAL(kd_perr_class(RD_KAFKA_RESP_ERR__MSG_TIMED_OUT),
                        KD_PERR_CLUSTER);
        CU_ASSERT_EQUAL(
            kd_perr_class(RD_KAFKA_RESP_ERR_NOT_LEADER_FOR_PARTITION),
            KD_PERR_CLUSTER);
        CU_ASSERT_EQUAL(
            kd_perr_class(RD_KAFKA_RESP_ERR_OUT_OF_ORDER_SEQUENCE_NUMBER),
            KD_PERR_PRODUCER);
        CU_ASSERT_EQUAL(kd_perr_class(RD_KAFKA_RESP_ERR__STATE),
                        KD_PERR_PRODUCER);
        CU_ASSERT_EQUAL(kd_perr_class(RD_KAFKA_RESP_ERR__FAIL),
                        KD_PERR_TRANSIENT);
        CU_ASSERT_TRUE(kd_perr_permanent(RD_KAFKA_RESP_ERR_INVALID_RECORD));
        CU_ASSERT_FALSE(kd_perr_permanent(RD_KAFKA_RESP_ERR__MSG_TIMED_OUT));
        CU_ASSERT_STRING_EQUAL(
            kd_perr_dead_reason(RD_KAFKA_RESP_ERR_RECORD_LIST_TOO_LARGE),
            "too-large");
        CU_ASSERT_STRING_EQUAL(
            kd_perr_dead_reason(RD_KAFKA_RESP_ERR_INVALID_RECORD),
            "target-refused");
        CU_ASSERT_STRING_EQUAL(
            kd_perr_dead_reason(RD_KAFKA_RESP_ERR_TOPIC_AUTHORIZATION_FAILED),
            "target-unavailable");
        CU_ASSERT_STRING_EQUAL(kd_perr_dead_reason(RD_KAFKA_RESP_ERR__FAIL),
                               "target-unavailable");
}

/* The fire stage's failure policy (kd_perr_then), every branch. */
static void test_fire_failure_policy(void)
{
        const rd_kafka_resp_err_t big = RD_KAFKA_RESP_ERR_MSG_SIZE_TOO_LARGE,
                                  missing = RD_KAFKA_RESP_ERR__UNKNOWN_TOPIC,
                                  timeout = RD_KAFKA_RESP_ERR__MSG_TIMED_OUT;
        const int last = KD_PERR_PERMANENT_RETRIES;
        /* A fire: a missing target a few tries, then the dead letters; a
         * timeout for ever; too large at once. */
        CU_ASSERT_EQUAL(kd_perr_then(KD_TASK_FIRING, missing, 0, 0),
                        KD_THEN_RETRY);
        CU_ASSERT_EQUAL(kd_perr_then(KD_TASK_FIRING, missing, last - 1, 0),
                        KD_THEN_RETRY);
        CU_ASSERT_EQUAL(kd_perr_then(KD_TASK_FIRING, missing, last, 0),
                        KD_THEN_FIRE_FAILED);
        CU_ASSERT_EQUAL(kd_perr_then(KD_TASK_FIRING, timeout, 100, 0),
                        KD_THEN_RETRY);
        CU_ASSERT_EQUAL(kd_perr_then(KD_TASK_FIRING, big, 0, 0),
                        KD_THEN_FIRE_FAILED);
        /* A hop: retried, unless too large (dead-lettered); a dead letter
         * too large goes again without key and value. */
        CU_ASSERT_EQUAL(kd_perr_then(KD_TASK_HOPPING, missing, last, 0),
                        KD_THEN_RETRY);
        CU_ASSERT_EQUAL(kd_perr_then(KD_TASK_HOPPING, big, 0, 0),
                        KD_THEN_FIRE_FAILED);
        CU_ASSERT_EQUAL(kd_perr_then(KD_TASK_DEAD, timeout, 9, 0),
                        KD_THEN_RETRY);
        CU_ASSERT_EQUAL(kd_perr_then(KD_TASK_DEAD, big, 0, 0),
                        KD_THEN_DEAD_SMALLER);
        /* Poisoned (the mode counted enough failures): never again as it
         * is. */
        CU_ASSERT_EQUAL(kd_perr_then(KD_TASK_FIRING, timeout, 0, 1),
                        KD_THEN_FIRE_FAILED);
        CU_ASSERT_EQUAL(kd_perr_then(KD_TASK_HOPPING, timeout, 0, 1),
                        KD_THEN_HOP_FAILED);
        CU_ASSERT_EQUAL(kd_perr_then(KD_TASK_HOPPING, big, 0, 1),
                        KD_THEN_FIRE_FAILED);
        CU_ASSERT_EQUAL(kd_perr_then(KD_TASK_DEAD, missing, 0, 1),
                        KD_THEN_DEAD_DROPPED);
        CU_ASSERT_EQUAL(kd_perr_then(KD_TASK_DEAD, big, 0, 1),
                        KD_THEN_DEAD_SMALLER);
}

static void test_keys_tell_records_and_kinds_apart(void)
{
        kd_part_t p;
        memset(&p, 0, sizeof(p));
        strcpy(p.topic, "kdelay.tier.1s");
        p.partition = 3;
        kd_task_t a, b;
        memset(&a, 0, sizeof(a));
        memset(&b, 0, sizeof(b));
        a.rec.offset = 10;
        b.rec.offset = 11;
        CU_ASSERT_EQUAL(kd_poison_key(&a, KD_TASK_FIRING), 0); /* no part */
        a.part = b.part = &p;
        uint64_t ka = kd_poison_key(&a, KD_TASK_FIRING);
        CU_ASSERT_NOT_EQUAL(ka, 0);
        CU_ASSERT_EQUAL(ka, kd_poison_key(&a, KD_TASK_FIRING));
        CU_ASSERT_NOT_EQUAL(ka, kd_poison_key(&a, KD_TASK_DEAD));
        CU_ASSERT_NOT_EQUAL(ka, kd_poison_key(&b, KD_TASK_FIRING));
}

static void test_aborts_count_commits_forget(void)
{
        kd_poison_t *p = calloc(1, sizeof(*p));
        CU_ASSERT_PTR_NOT_NULL_FATAL(p);
        CU_ASSERT_PTR_NULL(kd_poison_find(p, 7));
        /* Two records abort for a refused record: both counted. */
        CU_ASSERT_EQUAL(kd_poison_member(p, 7, 0), 0);
        CU_ASSERT_EQUAL(kd_poison_member(p, 8, 0), 0);
        kd_poison_aborted(p, RD_KAFKA_RESP_ERR_INVALID_RECORD, 0);
        CU_ASSERT_EQUAL(p->members_len, 0);
        kd_poison_entry_t *e = kd_poison_find(p, 7);
        CU_ASSERT_PTR_NOT_NULL_FATAL(e);
        CU_ASSERT_EQUAL(e->aborts, 1);
        CU_ASSERT_EQUAL(e->err, RD_KAFKA_RESP_ERR_INVALID_RECORD);
        /* A cluster outage counts against nobody. */
        CU_ASSERT_EQUAL(kd_poison_member(p, 7, 0), 0);
        CU_ASSERT_EQUAL(kd_poison_member(p, 9, 0), 0);
        kd_poison_aborted(p, RD_KAFKA_RESP_ERR__MSG_TIMED_OUT, 0);
        CU_ASSERT_EQUAL(kd_poison_find(p, 7)->aborts, 1);
        CU_ASSERT_PTR_NULL(kd_poison_find(p, 9));
        /* A commit of 7 forgets it; 8 stays. */
        CU_ASSERT_EQUAL(kd_poison_member(p, 7, 0), 0);
        kd_poison_committed(p);
        CU_ASSERT_PTR_NULL(kd_poison_find(p, 7));
        CU_ASSERT_PTR_NOT_NULL(kd_poison_find(p, 8));
        kd_poison_destroy(p);
        free(p);
}

/* A refused batch reports its own records: only they count, the other
 * members of the aborted transaction were its victims. */
static void test_blamed_members_alone_count(void)
{
        kd_poison_t *p = calloc(1, sizeof(*p));
        CU_ASSERT_PTR_NOT_NULL_FATAL(p);
        for (uint64_t k = 1; k <= 3; k++)
                CU_ASSERT_EQUAL(kd_poison_member(p, k, 0), 0);
        CU_ASSERT_EQUAL(kd_poison_blame(p, 2, 0), 0);
        kd_poison_aborted(p, RD_KAFKA_RESP_ERR_INVALID_RECORD, 0);
        CU_ASSERT_PTR_NULL(kd_poison_find(p, 1));
        CU_ASSERT_PTR_NOT_NULL(kd_poison_find(p, 2));
        CU_ASSERT_PTR_NULL(kd_poison_find(p, 3));
        CU_ASSERT_EQUAL(p->blamed_len, 0);
        /* Refused as a whole (no record blamed): every member counts. */
        for (uint64_t k = 1; k <= 3; k++)
                CU_ASSERT_EQUAL(kd_poison_member(p, k, 0), 0);
        kd_poison_aborted(p, RD_KAFKA_RESP_ERR_TOPIC_AUTHORIZATION_FAILED, 0);
        CU_ASSERT_EQUAL(kd_poison_find(p, 1)->aborts, 1);
        CU_ASSERT_EQUAL(kd_poison_find(p, 2)->aborts, 2);
        kd_poison_destroy(p);
        free(p);
}

/* A target that refused a record alone refuses its like later, for a
 * while: keyless records of a compacted topic, records at least as large
 * as the smallest refused one. */
static void test_refusals_learned_and_forgotten(void)
{
        kd_refusals_t *r = calloc(1, sizeof(*r));
        CU_ASSERT_PTR_NOT_NULL_FATAL(r);
        char target[] = "orders";
        kd_task_t keyless, keyed, big, small;
        memset(&keyless, 0, sizeof(keyless));
        keyless.rec.target = target;
        keyless.rec.value_len = 10;
        keyed = small = big = keyless;
        keyed.rec.key = "k";
        keyed.rec.key_len = 1;
        big.rec.key = small.rec.key = "k";
        big.rec.key_len = small.rec.key_len = 1;
        big.rec.value_len = 3000;
        small.rec.value_len = 2000;
        CU_ASSERT_EQUAL(kd_refusals_check(r, &keyless, 0, 0), 0);
        kd_refusals_learn(r, &keyless, RD_KAFKA_RESP_ERR_INVALID_RECORD, 0, 0);
        CU_ASSERT_EQUAL(kd_refusals_check(r, &keyless, 1000, 0),
                        RD_KAFKA_RESP_ERR_INVALID_RECORD);
        CU_ASSERT_EQUAL(kd_refusals_check(r, &keyed, 1000, 0), 0);
        kd_refusals_learn(r, &big, RD_KAFKA_RESP_ERR_MSG_SIZE_TOO_LARGE, 0, 0);
        CU_ASSERT_EQUAL(kd_refusals_check(r, &big, 1000, 0),
                        RD_KAFKA_RESP_ERR_MSG_SIZE_TOO_LARGE);
        CU_ASSERT_EQUAL(kd_refusals_check(r, &small, 1000, 0), 0);
        /* What the target refuses explains a refused batch of the keyed
         * or small records: they were its victims. Another target's
         * refusals explain nothing. */
        CU_ASSERT_TRUE(kd_refusals_explains(
            r, &keyed, RD_KAFKA_RESP_ERR_INVALID_RECORD, 1000));
        CU_ASSERT_TRUE(kd_refusals_explains(
            r, &small, RD_KAFKA_RESP_ERR_MSG_SIZE_TOO_LARGE, 1000));
        CU_ASSERT_FALSE(kd_refusals_explains(
            r, &small, RD_KAFKA_RESP_ERR_INVALID_TIMESTAMP, 1000));
        char other[] = "payments";
        kd_task_t elsewhere = keyed;
        elsewhere.rec.target = other;
        CU_ASSERT_FALSE(kd_refusals_explains(
            r, &elsewhere, RD_KAFKA_RESP_ERR_INVALID_RECORD, 1000));
        CU_ASSERT_EQUAL(kd_refusals_check(r, &elsewhere, 1000, 0), 0);
        CU_ASSERT_FALSE(kd_refusals_explains(
            r, &keyed, RD_KAFKA_RESP_ERR_INVALID_RECORD, KD_REFUSALS_TTL_MS));
        /* An operator's change is believed after the time-to-live. */
        CU_ASSERT_EQUAL(kd_refusals_check(r, &keyless, KD_REFUSALS_TTL_MS, 0),
                        0);
        CU_ASSERT_EQUAL(kd_refusals_check(r, &big, KD_REFUSALS_TTL_MS, 0), 0);
        free(r);
}

/* A replay (kdelay-replay-of) is answered only from what was learned
 * after its tier record was written: a refusal learned before it is
 * tried again for real, one learned after it (a replay of the same batch
 * refused alone) still answers. A delivery of what the target was known
 * to refuse forgets that much of it, and only that. */
static void test_refusals_replay_and_delivery(void)
{
        kd_refusals_t *r = calloc(1, sizeof(*r));
        CU_ASSERT_PTR_NOT_NULL_FATAL(r);
        char target[] = "orders";
        kd_task_t keyless, replay, keyed, big;
        memset(&keyless, 0, sizeof(keyless));
        keyless.rec.target = target;
        keyless.rec.value_len = 10;
        keyless.rec.append_ms = 1000;
        replay = keyed = big = keyless;
        keyed.rec.key = big.rec.key = "k";
        keyed.rec.key_len = big.rec.key_len = 1;
        big.rec.value_len = 3000;
        replay.rec.append_ms = 50000; /* written by dead replay at 50 s */
        replay.rec.hdrs = rd_kafka_headers_new(2);
        CU_ASSERT_PTR_NOT_NULL_FATAL(replay.rec.hdrs);
        CU_ASSERT_EQUAL(kd_refusals_since(&keyless), 0);
        CU_ASSERT_EQUAL(kd_refusals_since(&replay), 0);
        rd_kafka_header_add(replay.rec.hdrs, KDELAY_HDR_REPLAY_OF, -1,
                            "order-7", -1);
        CU_ASSERT_EQUAL(kd_refusals_since(&replay), 50000);

        /* Learned at 10 s (wall), before the replay was written. */
        kd_refusals_learn(r, &keyless, RD_KAFKA_RESP_ERR_INVALID_RECORD, 0,
                          10000);
        kd_refusals_learn(r, &big, RD_KAFKA_RESP_ERR_MSG_SIZE_TOO_LARGE, 0,
                          10000);
        CU_ASSERT_EQUAL(
            kd_refusals_check(r, &keyless, 100, kd_refusals_since(&keyless)),
            RD_KAFKA_RESP_ERR_INVALID_RECORD);
        CU_ASSERT_EQUAL(
            kd_refusals_check(r, &replay, 100, kd_refusals_since(&replay)), 0);
        /* ... which the fire stage still sees, to send it alone. */
        CU_ASSERT_EQUAL(kd_refusals_check(r, &replay, 100, 0),
                        RD_KAFKA_RESP_ERR_INVALID_RECORD);
        /* Learned again at 60 s, after the replay: it answers. */
        kd_refusals_learn(r, &replay, RD_KAFKA_RESP_ERR_INVALID_RECORD, 200,
                          60000);
        CU_ASSERT_EQUAL(
            kd_refusals_check(r, &replay, 300, kd_refusals_since(&replay)),
            RD_KAFKA_RESP_ERR_INVALID_RECORD);

        /* A keyed record delivered disproves nothing. */
        CU_ASSERT_EQUAL(kd_refusals_delivered(r, &keyed, 400), 0);
        CU_ASSERT_EQUAL(kd_refusals_check(r, &keyless, 400, 0),
                        RD_KAFKA_RESP_ERR_INVALID_RECORD);
        /* A keyless one delivered (the topic no longer compacted):
         * keyless records go for real again; the size is still known. */
        CU_ASSERT_EQUAL(kd_refusals_delivered(r, &replay, 500),
                        KD_REFUSALS_FORGOT_KEYLESS);
        CU_ASSERT_EQUAL(kd_refusals_check(r, &keyless, 600, 0), 0);
        CU_ASSERT_EQUAL(kd_refusals_check(r, &big, 600, 0),
                        RD_KAFKA_RESP_ERR_MSG_SIZE_TOO_LARGE);
        CU_ASSERT_EQUAL(r->used, 1);
        /* A record as large delivered (the limit raised): forgotten, and
         * the target's slot is free. */
        CU_ASSERT_EQUAL(kd_refusals_delivered(r, &big, 700),
                        KD_REFUSALS_FORGOT_SIZE);
        CU_ASSERT_EQUAL(kd_refusals_check(r, &big, 800, 0), 0);
        CU_ASSERT_EQUAL(r->used, 0);
        CU_ASSERT_EQUAL(kd_refusals_delivered(r, &big, 900), 0);
        rd_kafka_headers_destroy(replay.rec.hdrs);
        free(r);
}

/* The records a refused batch reports are one group: the likeliest
 * culprit goes alone first, the others wait for it a bounded while (it
 * may never come), and a record forgiven as a victim that aborts a
 * shared batch again is no longer forgiven. */
static void test_group_first_and_its_wait(void)
{
        kd_poison_t *p = calloc(1, sizeof(*p));
        CU_ASSERT_PTR_NOT_NULL_FATAL(p);
        for (uint64_t k = 1; k <= 3; k++)
                CU_ASSERT_EQUAL(kd_poison_member(p, k, 0), 0);
        CU_ASSERT_EQUAL(kd_poison_blame(p, 1, 300), 0);
        CU_ASSERT_EQUAL(kd_poison_blame(p, 2, INT64_MAX), 0); /* keyless */
        CU_ASSERT_EQUAL(kd_poison_blame(p, 3, 300), 0);
        kd_poison_aborted(p, RD_KAFKA_RESP_ERR_INVALID_RECORD, 5000);
        kd_poison_entry_t *a = kd_poison_find(p, 1), *b = kd_poison_find(p, 2);
        CU_ASSERT_PTR_NOT_NULL_FATAL(a);
        CU_ASSERT_PTR_NOT_NULL_FATAL(b);
        CU_ASSERT_EQUAL(a->group, b->group);
        CU_ASSERT_EQUAL(a->first, 2);
        CU_ASSERT_EQUAL(a->first_until, 5000 + KD_POISON_FIRST_WAIT_MS);
        /* Found alone, the culprit clears its victims. */
        kd_poison_forgive(p, b->group, 2);
        CU_ASSERT_PTR_NULL(kd_poison_find(p, 1));
        CU_ASSERT_PTR_NULL(kd_poison_find(p, 3));
        CU_ASSERT_PTR_NOT_NULL(kd_poison_find(p, 2));
        /* Forgiven (a known refusal explained it), it aborts again. */
        kd_poison_entry_t *c = kd_poison_get(p, 4);
        c->aborts = 1;
        c->forgiven = 1;
        CU_ASSERT_EQUAL(kd_poison_member(p, 4, 0), 0);
        CU_ASSERT_EQUAL(kd_poison_blame(p, 4, 10), 0);
        kd_poison_aborted(p, RD_KAFKA_RESP_ERR_INVALID_RECORD, 9000);
        CU_ASSERT_EQUAL(c->aborts, 2);
        CU_ASSERT_FALSE(c->forgiven);
        kd_poison_destroy(p);
        free(p);
}

/* A transaction refused as a whole by a target (no record blamed): its
 * records become a group whose first is one of the destination fewest
 * went to; refused alone, it clears those that went elsewhere, not
 * those that went where it did. All to one destination: no group. */
static void test_target_refusal_rarest_first(void)
{
        kd_poison_t *p = calloc(1, sizeof(*p));
        CU_ASSERT_PTR_NOT_NULL_FATAL(p);
        uint64_t x = kd_poison_where("orders"), y = kd_poison_where("audit");
        CU_ASSERT_NOT_EQUAL(x, y);
        CU_ASSERT_NOT_EQUAL(kd_poison_where(""), 0);
        for (uint64_t k = 1; k <= 3; k++)
                CU_ASSERT_EQUAL(kd_poison_member(p, k, x), 0);
        CU_ASSERT_EQUAL(kd_poison_member(p, 4, y), 0);
        CU_ASSERT_EQUAL(kd_poison_member(p, 5, y), 0);
        CU_ASSERT_EQUAL(kd_poison_member(p, 6, 0), 0); /* a hop */
        kd_poison_aborted(p, RD_KAFKA_RESP_ERR_TOPIC_AUTHORIZATION_FAILED, 100);
        kd_poison_entry_t *e[7] = {NULL};
        for (uint64_t k = 1; k <= 6; k++) {
                e[k] = kd_poison_find(p, k);
                CU_ASSERT_PTR_NOT_NULL_FATAL(e[k]);
                CU_ASSERT_EQUAL(e[k]->aborts, 1);
                CU_ASSERT_EQUAL(e[k]->group, e[1]->group);
                /* y: fewer than x; the hop (kdelay's own) least likely */
                CU_ASSERT_EQUAL(e[k]->first, 4);
                CU_ASSERT_EQUAL(e[k]->first_until,
                                100 + KD_POISON_FIRST_WAIT_MS);
        }
        CU_ASSERT_NOT_EQUAL(e[1]->group, 0);
        CU_ASSERT_EQUAL(e[4]->where, y);
        /* 4 refused alone by y: 1-3 and 6 were victims, 5 (also to y)
         * is not cleared. */
        kd_poison_forgive_elsewhere(p, e[4]->group, 4, y);
        for (uint64_t k = 1; k <= 3; k++)
                CU_ASSERT_PTR_NULL(kd_poison_find(p, k));
        CU_ASSERT_PTR_NULL(kd_poison_find(p, 6));
        CU_ASSERT_PTR_NOT_NULL(kd_poison_find(p, 4));
        CU_ASSERT_PTR_NOT_NULL(kd_poison_find(p, 5));
        /* All to one target: each alone in turn, no group. */
        for (uint64_t k = 7; k <= 9; k++)
                CU_ASSERT_EQUAL(kd_poison_member(p, k, x), 0);
        kd_poison_aborted(p, RD_KAFKA_RESP_ERR_TOPIC_AUTHORIZATION_FAILED, 200);
        CU_ASSERT_EQUAL(kd_poison_find(p, 7)->group, 0);
        CU_ASSERT_EQUAL(kd_poison_find(p, 7)->first, 0);
        /* A record refusal names its group by blame only. */
        for (uint64_t k = 10; k <= 11; k++)
                CU_ASSERT_EQUAL(kd_poison_member(p, k, k == 10 ? x : y), 0);
        kd_poison_aborted(p, RD_KAFKA_RESP_ERR_INVALID_RECORD, 300);
        CU_ASSERT_EQUAL(kd_poison_find(p, 10)->group, 0);
        kd_poison_destroy(p);
        free(p);
}

static void test_full_table_replaces_the_oldest(void)
{
        kd_poison_t *p = calloc(1, sizeof(*p));
        CU_ASSERT_PTR_NOT_NULL_FATAL(p);
        for (uint64_t k = 1; k <= KD_POISON_MAX + 10; k++)
                kd_poison_get(p, k)->aborts = 1;
        CU_ASSERT_EQUAL(p->used, KD_POISON_MAX);
        for (uint64_t k = 1; k <= 10; k++)
                CU_ASSERT_PTR_NULL(kd_poison_find(p, k));
        for (uint64_t k = 11; k <= KD_POISON_MAX + 10; k++)
                CU_ASSERT_PTR_NOT_NULL(kd_poison_find(p, k));
        kd_poison_destroy(p);
        free(p);
}

int main(void)
{
        static const kd_test_case_t cases[] = {
            KD_TEST(test_error_classes_and_reasons),
            KD_TEST(test_fire_failure_policy),
            KD_TEST(test_keys_tell_records_and_kinds_apart),
            KD_TEST(test_aborts_count_commits_forget),
            KD_TEST(test_blamed_members_alone_count),
            KD_TEST(test_refusals_learned_and_forgotten),
            KD_TEST(test_refusals_replay_and_delivery),
            KD_TEST(test_group_first_and_its_wait),
            KD_TEST(test_target_refusal_rarest_first),
            KD_TEST(test_full_table_replaces_the_oldest),
            KD_TEST_END};
        return kd_test_run("poison_table", cases, NULL, NULL);
}
