/* SPDX-License-Identifier: Apache-2.0 */
/* Integration: kdelay-forwarder against hostile input on the real broker
 * and MariaDB. Into every tier topic go 3,000 records with broken,
 * random and abusive headers (binary, over-long and invalid UTF-8 ids,
 * 100 KB values, duplicate kdelay-* headers, fire-at values that are
 * negative, overflowing, padded or absurd, unknown versions, each required
 * header missing, bad targets including kdelay's own topics, an existing
 * topic forwarder.allowed_targets does not allow, null keys and
 * values, no headers at all), interleaved with 300 valid tasks (library
 * and raw, odd but valid ids and fire-at forms, some raw ones with a
 * forged kdelay-not-before) due within 5-15 s.
 *
 * It checks: the forwarder survives and exits 0 on SIGTERM; every hostile
 * record is dead-lettered exactly once with the reason docs/wire-format.md
 * names for what it breaks (where it was open, the documentation now says
 * what src/lib/shared/wire.c does: a C0 control character makes an id bad-id, a
 * digits-only fire-at beyond int64 is bad-fire-at, and of several defects
 * the first in the table's order wins); no hostile record reaches a
 * target; every valid task is delivered exactly once, never early, at most
 * 3 s late in its right tier and at most that plus the tier's delay in one
 * too large (lateness p50/p99/max printed).
 *
 * The PRNG seed is printed; KD_HOSTILE_SEED=n repeats a run's input. */
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "it_env.h"
#include "kd_test.h"
#include "kd_tiers.h"
#include "kd_util.h"

#define N_HOSTILE   3000
#define N_VALID     300
#define N_TARGETS   2
#define HUGE_LEN    (100 * 1024)
#define MAX_LATE_MS 3000

static char prefix[40], group[64], db[64], url[256];
static char targets[N_TARGETS][96], dead_topic[96], missing_topic[96];
static char forbidden_topic[96], allowed[320];
static kd_tiers_t tiers;
static char tier_topics[KD_TIERS_MAX][128];
static char huge[HUGE_LEN]; /* filled per use */

/* --- a seeded PRNG (xorshift64*) --- */

static uint64_t rng_state;

static uint64_t rnd(void)
{
        rng_state ^= rng_state >> 12;
        rng_state ^= rng_state << 25;
        rng_state ^= rng_state >> 27;
        return rng_state * 2685821657736338717ULL;
}

/* Uniform in [0, n). */
static size_t pick(size_t n)
{
        return (size_t)(rnd() % n);
}

static int suite_init(void)
{
        char errstr[512];
        if (it_env_init())
                return -1;
        const char *seed = getenv("KD_HOSTILE_SEED");
        rng_state = seed ? strtoull(seed, NULL, 10)
                         : (uint64_t)kd_now_ms() * 2654435761ULL;
        if (!rng_state)
                rng_state = 1;
        printf("\n  seed: KD_HOSTILE_SEED=%llu", (unsigned long long)rng_state);
        it_unique(prefix, sizeof(prefix), "ithost");
        snprintf(group, sizeof(group), "%s-group", prefix);
        it_unique(db, sizeof(db), "kdit_host");
        if (it_db_create(db, 1, url, sizeof(url)) ||
            it_tiers_create(prefix, url, 2))
                return -1;
        for (int i = 0; i < N_TARGETS; i++) {
                snprintf(targets[i], sizeof(targets[i]), "%s.target%d", prefix,
                         i);
                if (it_create_topic(targets[i], 2))
                        return -1;
        }
        snprintf(dead_topic, sizeof(dead_topic), "%s.dead", prefix);
        snprintf(missing_topic, sizeof(missing_topic), "%s.no-such-topic",
                 prefix);
        /* An existing topic the forwarder may not fire to. */
        snprintf(forbidden_topic, sizeof(forbidden_topic), "%s.forbidden",
                 prefix);
        if (it_create_topic(forbidden_topic, 1))
                return -1;
        snprintf(allowed, sizeof(allowed),
                 "forwarder.allowed_targets=%s.target*, %s", prefix,
                 missing_topic);
        /* The old four-tier ladder, as a producer that was never moved to
         * the default one writes it: the forwarder (default ladder) reads
         * those topics too. */
        if (kd_tiers_parse(&tiers, "1s,1m,30m,7d", errstr, sizeof(errstr)))
                return -1;
        for (size_t i = 0; i < tiers.cnt; i++)
                kd_tiers_topic(&tiers, i, prefix, tier_topics[i],
                               sizeof(tier_topics[i]));
        return 0;
}

static int suite_cleanup(void)
{
        it_db_drop(db);
        return 0;
}

/* --- the forwarder --- */

static it_fwd_t fwd = {"fwHostile", -1, ""};

static void fwd_start(void)
{
        const char *props[] = {
            "forwarder.hold_horizon=10s", "forwarder.stats_interval=5s",
            "forwarder.commit_interval=500ms", allowed, NULL};
        CU_ASSERT_FATAL(it_fwd_start(&fwd, KDELAY_FORWARDER, prefix, group, url,
                                     props) == 0);
}

/* --- producing --- */

/* A header value: bytes, or null (NULL ptr). len -1 = strlen. */
static void hadd(rd_kafka_headers_t *h, const char *name, const void *v,
                 ssize_t len)
{
        rd_kafka_header_add(h, name, -1, v, v && len < 0 ? -1 : v ? len : 0);
}

static rd_kafka_t *raw_producer(void)
{
        static const char *const props[] = {
            "enable.idempotence", "true",    "linger.ms", "20",
            "message.max.bytes",  "1048576", NULL};
        return it_kafka_new(RD_KAFKA_PRODUCER, props);
}

/* Produces one record; takes h (may be NULL: no headers). */
static void send_raw(rd_kafka_t *rk, size_t tier, const void *key,
                     size_t key_len, const void *value, size_t len,
                     rd_kafka_headers_t *h)
{
        rd_kafka_resp_err_t err;
        /* An empty header list is what Kafka stores for "no headers". */
        if (!h)
                h = rd_kafka_headers_new(0);
        while (
            (err = rd_kafka_producev(rk, RD_KAFKA_V_TOPIC(tier_topics[tier]),
                                     RD_KAFKA_V_KEY((void *)key, key_len),
                                     RD_KAFKA_V_VALUE((void *)value, len),
                                     RD_KAFKA_V_MSGFLAGS(RD_KAFKA_MSG_F_COPY),
                                     RD_KAFKA_V_HEADERS(h), RD_KAFKA_V_END)) ==
            RD_KAFKA_RESP_ERR__QUEUE_FULL)
                rd_kafka_poll(rk, 100);
        if (err)
                rd_kafka_headers_destroy(h);
        CU_ASSERT_EQUAL_FATAL(err, 0);
        rd_kafka_poll(rk, 0);
}

/* A few user headers with random binary names and values (never in the
 * kdelay- namespace), some without value. */
static void junk_user_headers(rd_kafka_headers_t *h)
{
        for (size_t k = pick(4); k > 0; k--) {
                char name[24], val[64];
                size_t nl = 1 + pick(sizeof(name) - 2);
                for (size_t i = 0; i < nl; i++)
                        name[i] = (char)(1 + pick(255));
                name[0] = 'x'; /* not "kdelay-" */
                name[nl] = '\0';
                size_t vl = pick(sizeof(val));
                for (size_t i = 0; i < vl; i++)
                        val[i] = (char)pick(256);
                hadd(h, name, pick(5) ? val : NULL, (ssize_t)vl);
        }
}

/* --- hostile records --- */

/* One kdelay-* header as it will be written: absent, once or twice. */
typedef struct fld {
        int count;      /* 0, 1 or 2 */
        const void *v;  /* NULL = header without value */
        ssize_t len;    /* -1 = strlen */
        const void *v2; /* the second copy when count == 2 */
        ssize_t len2;
        int good;   /* the value is valid for this field */
        int absurd; /* fire-at: digits beyond now + 10 years */
        int own;    /* target: one of the forwarder's own topics */
} fld_t;

enum { F_V, F_ID, F_TARGET, F_FIRE, F__N };
static const char *const fld_names[F__N] = {"kdelay-v", "kdelay-id",
                                            "kdelay-target", "kdelay-fire-at"};

/* The record classes: what is broken, and the reason it must get. */
typedef struct cls {
        const char *name;
        const char *reason; /* NULL: computed (junk) */
} cls_t;

enum {
        C_NO_HEADERS,
        C_NO_HEADERS_NULL_VALUE,
        C_ALL_NULL, /* no headers, null key and value: no marker at all */
        C_NO_VERSION,
        C_VERSION_CASE,
        C_VERSION_2,
        C_VERSION_EMPTY,
        C_VERSION_01,
        C_VERSION_NULL,
        C_VERSION_PADDED,
        C_VERSION_HUGE,
        C_DUP_VERSION,
        C_NO_ID,
        C_ID_EMPTY,
        C_ID_NULL,
        C_ID_129,
        C_ID_129_MULTIBYTE,
        C_ID_HUGE,
        C_ID_BINARY,
        C_ID_BAD_UTF8,
        C_ID_NUL,
        C_ID_CONTROL,
        C_DUP_ID,
        C_NO_TARGET,
        C_TARGET_EMPTY,
        C_TARGET_DOT,
        C_TARGET_250,
        C_TARGET_ILLEGAL,
        C_TARGET_NULL,
        C_TARGET_HUGE,
        C_TARGET_OWN_TIER,
        C_TARGET_OWN_DEAD,
        C_DUP_TARGET,
        C_NO_FIRE_AT,
        C_FIRE_NEGATIVE,
        C_FIRE_OVERFLOW,
        C_FIRE_NON_DIGIT,
        C_FIRE_PADDED,
        C_FIRE_EMPTY,
        C_FIRE_NULL,
        C_FIRE_HUGE,
        C_FIRE_ABSURD,
        C_DUP_FIRE_AT,
        C_FORGED_REASON,
        C_TARGET_MISSING,
        C_TARGET_FORBIDDEN,
        C_JUNK,
        C__N
};

static const cls_t classes[C__N] = {
    [C_NO_HEADERS] = {"no-headers", "missing-version"},
    [C_NO_HEADERS_NULL_VALUE] = {"no-headers-null-value", "missing-version"},
    [C_ALL_NULL] = {"all-null", "missing-version"},
    [C_NO_VERSION] = {"no-version", "missing-version"},
    [C_VERSION_CASE] = {"version-name-case", "missing-version"},
    [C_VERSION_2] = {"version-2", "unknown-version"},
    [C_VERSION_EMPTY] = {"version-empty", "unknown-version"},
    [C_VERSION_01] = {"version-01", "unknown-version"},
    [C_VERSION_NULL] = {"version-null", "unknown-version"},
    [C_VERSION_PADDED] = {"version-padded", "unknown-version"},
    [C_VERSION_HUGE] = {"version-huge", "unknown-version"},
    [C_DUP_VERSION] = {"dup-version", "duplicate-header"},
    [C_NO_ID] = {"no-id", "missing-id"},
    [C_ID_EMPTY] = {"id-empty", "bad-id"},
    [C_ID_NULL] = {"id-null", "bad-id"},
    [C_ID_129] = {"id-129", "bad-id"},
    [C_ID_129_MULTIBYTE] = {"id-129-multibyte", "bad-id"},
    [C_ID_HUGE] = {"id-huge", "bad-id"},
    [C_ID_BINARY] = {"id-binary", "bad-id"},
    [C_ID_BAD_UTF8] = {"id-bad-utf8", "bad-id"},
    [C_ID_NUL] = {"id-nul", "bad-id"},
    [C_ID_CONTROL] = {"id-control", "bad-id"}, /* wire.c's reading */
    [C_DUP_ID] = {"dup-id", "duplicate-header"},
    [C_NO_TARGET] = {"no-target", "missing-target"},
    [C_TARGET_EMPTY] = {"target-empty", "bad-target"},
    [C_TARGET_DOT] = {"target-dot", "bad-target"},
    [C_TARGET_250] = {"target-250", "bad-target"},
    [C_TARGET_ILLEGAL] = {"target-illegal", "bad-target"},
    [C_TARGET_NULL] = {"target-null", "bad-target"},
    [C_TARGET_HUGE] = {"target-huge", "bad-target"},
    [C_TARGET_OWN_TIER] = {"target-own-tier", "bad-target"},
    [C_TARGET_OWN_DEAD] = {"target-own-dead", "bad-target"},
    [C_DUP_TARGET] = {"dup-target", "duplicate-header"},
    [C_NO_FIRE_AT] = {"no-fire-at", "missing-fire-at"},
    [C_FIRE_NEGATIVE] = {"fire-at-negative", "bad-fire-at"},
    [C_FIRE_OVERFLOW] = {"fire-at-overflow", "bad-fire-at"}, /* wire.c's */
    [C_FIRE_NON_DIGIT] = {"fire-at-non-digit", "bad-fire-at"},
    [C_FIRE_PADDED] = {"fire-at-padded", "bad-fire-at"},
    [C_FIRE_EMPTY] = {"fire-at-empty", "bad-fire-at"},
    [C_FIRE_NULL] = {"fire-at-null", "bad-fire-at"},
    [C_FIRE_HUGE] = {"fire-at-huge", "bad-fire-at"},
    [C_FIRE_ABSURD] = {"fire-at-absurd", "absurd-fire-at"},
    [C_DUP_FIRE_AT] = {"dup-fire-at", "duplicate-header"},
    [C_FORGED_REASON] = {"forged-dead-reason", "unknown-version"},
    [C_TARGET_MISSING] = {"target-missing", "target-unavailable"},
    [C_TARGET_FORBIDDEN] = {"target-forbidden", "target-forbidden"},
    [C_JUNK] = {"junk", NULL},
};

typedef struct hostile {
        int cls;
        const char *reason; /* expected */
        int seen;           /* copies on the dead topic */
} hostile_t;

/* One more, larger than librdkafka's default message.max.bytes
 * (1,000,000) but within the broker's record limit (1,048,588): the
 * forwarder must still dead-letter it. */
#define OVERSIZE_LEN 1010000
static hostile_t hostiles[N_HOSTILE + 1];
static int n_anonymous; /* records of class all-null: no marker */

/* The reason for fields f by the table of docs/wire-format.md, checked in
 * its order; the own-topic check comes after a successful decode. NULL =
 * a valid task. */
static const char *reason_for(const fld_t *f)
{
        static const char *const missing[F__N] = {
            "missing-version", "missing-id", "missing-target",
            "missing-fire-at"};
        static const char *const bad[F__N] = {"unknown-version", "bad-id",
                                              "bad-target", "bad-fire-at"};
        for (int i = 0; i < F__N; i++) {
                if (f[i].count == 0)
                        return missing[i];
                if (f[i].count > 1)
                        return "duplicate-header";
                if (!f[i].good)
                        return bad[i];
        }
        if (f[F_FIRE].absurd)
                return "absurd-fire-at";
        if (f[F_TARGET].own)
                return "bad-target";
        return NULL;
}

static const char *fill_huge(char c)
{
        memset(huge, c, sizeof(huge));
        return huge;
}

/* Random junk: each field absent, once or twice, from a pool of good and
 * bad values. */
static void junk_fields(fld_t *f, const char *id, const char *fire_at)
{
        static const struct {
                const char *v;
                int good;
        } vs[] = {{"1", 1}, {"2", 0}, {"", 0}, {NULL, 0}, {"01", 0}},
          ids[] = {{"", 0},
                   {NULL, 0},
                   {"\xff\xfe", 0},
                   {"a\x01", 0},
                   {"\xc0\xaf", 0}},
          tgts[] = {{"..", 0}, {"a b", 0}, {NULL, 0}, {"", 0}},
          fas[] = {{"-1", 0}, {"", 0}, {NULL, 0}, {"12:00", 0}, {" 1", 0}};
        for (int i = 0; i < F__N; i++) {
                size_t c = pick(10);
                f[i].count = c == 0 ? 0 : c == 1 ? 2 : 1;
                int good = pick(3) != 0;
                switch (i) {
                case F_V: {
                        size_t k = pick(5);
                        f[i].v = vs[k].v, f[i].good = vs[k].good;
                        break;
                }
                case F_ID:
                        if (good) {
                                f[i].v = id, f[i].good = 1;
                        } else {
                                size_t k = pick(5);
                                f[i].v = ids[k].v, f[i].good = 0;
                        }
                        break;
                case F_TARGET:
                        if (good) {
                                f[i].v = targets[pick(N_TARGETS)];
                                f[i].good = 1;
                        } else if (pick(2)) {
                                size_t k = pick(4);
                                f[i].v = tgts[k].v, f[i].good = 0;
                        } else {
                                f[i].v = tier_topics[pick(tiers.cnt)];
                                f[i].good = f[i].own = 1;
                        }
                        break;
                default:
                        if (good) {
                                f[i].v = fire_at, f[i].good = 1;
                        } else if (pick(4) == 0) {
                                f[i].v = "99999999999999", f[i].good = 1;
                                f[i].absurd = 1;
                        } else {
                                size_t k = pick(5);
                                f[i].v = fas[k].v, f[i].good = 0;
                        }
                }
                f[i].v2 = f[i].v;
        }
        /* Junk that happens to be a valid task loses its version. */
        if (!reason_for(f))
                f[F_V].count = 0;
}

/* Writes hostile record n to a random tier. */
static void send_hostile(rd_kafka_t *rk, int n)
{
        hostile_t *hr = &hostiles[n];
        char value[32], key[32], id[64], fire_at[24], buf[300];
        size_t tier = pick(tiers.cnt);
        int64_t now = kd_now_ms();
        snprintf(value, sizeof(value), "hostile-%d", n);
        snprintf(key, sizeof(key), "hk%d", n);
        snprintf(id, sizeof(id), "h-%s-%d", prefix, n);
        snprintf(fire_at, sizeof(fire_at), "%lld",
                 (long long)(now + 5000 + (int64_t)pick(10000)));
        /* Valid unless the class says otherwise. */
        fld_t f[F__N] = {
            {1, "1", -1, "1", -1, 1, 0, 0},
            {1, id, -1, id, -1, 1, 0, 0},
            {1, targets[n % N_TARGETS], -1, targets[n % N_TARGETS], -1, 1, 0,
             0},
            {1, fire_at, -1, fire_at, -1, 1, 0, 0},
        };
        int cls = hr->cls = (int)pick(C__N + 8);
        if (cls >= C__N)
                cls = hr->cls = C_JUNK; /* junk is the most frequent class */
        const void *val = value, *k = key;
        rd_kafka_headers_t *h = rd_kafka_headers_new(8);
        switch (cls) {
        case C_NO_HEADERS_NULL_VALUE:
                k = value; /* the marker moves to the key */
                val = NULL;
                /* fall through */
        case C_NO_HEADERS:
                rd_kafka_headers_destroy(h);
                h = NULL;
                break;
        case C_ALL_NULL:
                rd_kafka_headers_destroy(h);
                h = NULL;
                k = val = NULL;
                n_anonymous++;
                break;
        case C_NO_VERSION:
                f[F_V].count = 0;
                break;
        case C_VERSION_CASE:
                f[F_V].count = 0;
                hadd(h, pick(2) ? "KDELAY-V" : "Kdelay-V", "1", -1);
                break;
        case C_VERSION_2:
                f[F_V].v = "2";
                break;
        case C_VERSION_EMPTY:
                f[F_V].v = "";
                break;
        case C_VERSION_01:
                f[F_V].v = "01";
                break;
        case C_VERSION_NULL:
                f[F_V].v = NULL;
                break;
        case C_VERSION_PADDED: {
                static const char *const pads[] = {" 1", "1 ", "1\n", "1\0"};
                size_t p = pick(4);
                f[F_V].v = pads[p];
                f[F_V].len = 2;
                break;
        }
        case C_VERSION_HUGE:
                f[F_V].v = fill_huge('1');
                f[F_V].len = HUGE_LEN;
                break;
        case C_DUP_VERSION:
                f[F_V].count = 2;
                break;
        case C_NO_ID:
                f[F_ID].count = 0;
                break;
        case C_ID_EMPTY:
                f[F_ID].v = "";
                break;
        case C_ID_NULL:
                f[F_ID].v = NULL;
                break;
        case C_ID_129:
                memset(buf, 'i', 129);
                f[F_ID].v = buf, f[F_ID].len = 129;
                break;
        case C_ID_129_MULTIBYTE: /* 43 euro signs of 3 bytes */
                for (int i = 0; i < 43; i++)
                        memcpy(buf + 3 * i, "\xe2\x82\xac", 3);
                f[F_ID].v = buf, f[F_ID].len = 129;
                break;
        case C_ID_HUGE:
                f[F_ID].v = fill_huge('i');
                f[F_ID].len = HUGE_LEN;
                break;
        case C_ID_BINARY: { /* random bytes, one of them never UTF-8 */
                size_t len = 1 + pick(100);
                for (size_t i = 0; i < len; i++)
                        buf[i] = (char)pick(256);
                buf[pick(len)] = (char)0xff;
                f[F_ID].v = buf, f[F_ID].len = (ssize_t)len;
                break;
        }
        case C_ID_BAD_UTF8: {
                static const char *const bad[] = {
                    "ab\xc0\xaf",         /* overlong "/" */
                    "ab\xed\xa0\x80",     /* surrogate U+D800 */
                    "ab\xe2\x82",         /* truncated */
                    "ab\x80",             /* lone continuation */
                    "ab\xf4\x90\x80\x80", /* above U+10FFFF */
                    "ab\xf5\x80\x80\x80", /* never a lead byte */
                    "ab\xe0\x80\x80",     /* overlong NUL */
                };
                f[F_ID].v = bad[pick(sizeof(bad) / sizeof(bad[0]))];
                break;
        }
        case C_ID_NUL:
                f[F_ID].v = "ab\0cd", f[F_ID].len = 5;
                break;
        case C_ID_CONTROL: {
                static const char *const ctl[] = {"a\x01", "a\n", "a\t",
                                                  "a\x1b[31m", "a\x7f"};
                f[F_ID].v = ctl[pick(5)];
                break;
        }
        case C_DUP_ID:
                f[F_ID].count = 2;
                if (pick(2))
                        f[F_ID].v2 = "another-id";
                break;
        case C_NO_TARGET:
                f[F_TARGET].count = 0;
                break;
        case C_TARGET_EMPTY:
                f[F_TARGET].v = "";
                break;
        case C_TARGET_DOT:
                f[F_TARGET].v = pick(2) ? "." : "..";
                break;
        case C_TARGET_250:
                memset(buf, 't', 250);
                f[F_TARGET].v = buf, f[F_TARGET].len = 250;
                break;
        case C_TARGET_ILLEGAL: {
                static const char *const ill[] = {"a b", "a/b", "t\xc3\xa4",
                                                  "a*b", "a,b", "\xff",
                                                  "a:b", "a\\b"};
                f[F_TARGET].v = ill[pick(sizeof(ill) / sizeof(ill[0]))];
                if (pick(4) == 0)
                        f[F_TARGET].v = "ab\0cd", f[F_TARGET].len = 5;
                break;
        }
        case C_TARGET_NULL:
                f[F_TARGET].v = NULL;
                break;
        case C_TARGET_HUGE:
                f[F_TARGET].v = fill_huge('t');
                f[F_TARGET].len = HUGE_LEN;
                break;
        case C_TARGET_OWN_TIER:
                f[F_TARGET].v = tier_topics[pick(tiers.cnt)];
                break;
        case C_TARGET_OWN_DEAD:
                f[F_TARGET].v = dead_topic;
                break;
        case C_DUP_TARGET:
                f[F_TARGET].count = 2;
                f[F_TARGET].v2 = targets[(n + 1) % N_TARGETS];
                break;
        case C_NO_FIRE_AT:
                f[F_FIRE].count = 0;
                break;
        case C_FIRE_NEGATIVE:
                snprintf(buf, sizeof(buf), "-%s", fire_at);
                f[F_FIRE].v = pick(2) ? buf : "-1";
                break;
        case C_FIRE_OVERFLOW: { /* digits only, beyond int64 */
                static const char *const big[] = {
                    "9223372036854775808", "99999999999999999999",
                    "18446744073709551616", "340282366920938463463374607"};
                f[F_FIRE].v = big[pick(4)];
                break;
        }
        case C_FIRE_NON_DIGIT: {
                static const char *const nd[] = {"12:00",
                                                 "1e12",
                                                 "0x10",
                                                 "now",
                                                 "1.5",
                                                 "\xef\xbc\x91",
                                                 "2026-01-01T00:00:00Z"};
                f[F_FIRE].v = nd[pick(sizeof(nd) / sizeof(nd[0]))];
                break;
        }
        case C_FIRE_PADDED: {
                static const char *const fmt[] = {" %s", "%s ", "%s\n", "\t%s",
                                                  "+%s"};
                snprintf(buf, sizeof(buf), fmt[pick(5)], fire_at);
                f[F_FIRE].v = buf;
                break;
        }
        case C_FIRE_EMPTY:
                f[F_FIRE].v = "";
                break;
        case C_FIRE_NULL:
                f[F_FIRE].v = NULL;
                break;
        case C_FIRE_HUGE:
                f[F_FIRE].v = fill_huge('9');
                f[F_FIRE].len = HUGE_LEN;
                break;
        case C_FIRE_ABSURD:
                if (pick(2)) {
                        f[F_FIRE].v = "9223372036854775807";
                } else { /* now + 10 years + 2 days */
                        snprintf(buf, sizeof(buf), "%lld",
                                 (long long)(now + KDELAY_MAX_DELAY_MS +
                                             2 * 86400000LL));
                        f[F_FIRE].v = buf;
                }
                break;
        case C_DUP_FIRE_AT:
                f[F_FIRE].count = 2;
                break;
        case C_FORGED_REASON:
                hadd(h, KDELAY_HDR_DEAD_REASON, "forged", -1);
                f[F_V].v = "2";
                break;
        case C_TARGET_MISSING:
                f[F_TARGET].v = missing_topic;
                break;
        case C_TARGET_FORBIDDEN:
                f[F_TARGET].v = forbidden_topic;
                break;
        case C_JUNK:
                junk_fields(f, id, fire_at);
                break;
        }
        hr->reason = classes[cls].reason ? classes[cls].reason : reason_for(f);
        if (h) {
                /* The kdelay-* headers in a random order among junk. */
                int order[F__N] = {0, 1, 2, 3};
                for (int i = F__N - 1; i > 0; i--) {
                        int j = (int)pick((size_t)i + 1), t = order[i];
                        order[i] = order[j];
                        order[j] = t;
                }
                junk_user_headers(h);
                for (int i = 0; i < F__N; i++) {
                        const fld_t *x = &f[order[i]];
                        if (x->count >= 1)
                                hadd(h, fld_names[order[i]], x->v, x->len);
                        junk_user_headers(h);
                        if (x->count >= 2)
                                hadd(h, fld_names[order[i]], x->v2, x->len2);
                }
        }
        if (pick(8) == 0 && k == key)
                k = NULL; /* null key */
        send_raw(rk, tier, k, k ? strlen(k) : 0, val, val ? strlen(val) : 0, h);
}

/* The oversized record: kdelay-v 2, the marker in its key. */
static void send_oversize(rd_kafka_t *rk)
{
        char key[32];
        char *value = malloc(OVERSIZE_LEN);
        CU_ASSERT_PTR_NOT_NULL_FATAL(value);
        memset(value, 'o', OVERSIZE_LEN);
        snprintf(key, sizeof(key), "hostile-%d", N_HOSTILE);
        hostiles[N_HOSTILE].cls = C_VERSION_2;
        hostiles[N_HOSTILE].reason = "unknown-version";
        rd_kafka_headers_t *h = rd_kafka_headers_new(1);
        hadd(h, KDELAY_HDR_VERSION, "2", -1);
        send_raw(rk, 0, key, strlen(key), value, OVERSIZE_LEN, h);
        free(value);
}

/* --- valid tasks --- */

typedef struct valid {
        char id[KDELAY_ID_MAX + 1];
        int64_t fire_at;
        int64_t sent_ms; /* when it was produced */
        int target;
        int null_kv;   /* null key and null value */
        int dup_hdr;   /* carries user header test-dup twice */
        int64_t slack; /* lateness allowed: a tier too large adds its delay */
        int delivered;
        int64_t ts; /* first delivery's timestamp */
} valid_t;

static valid_t valids[N_VALID];
/* When every record was acknowledged by Kafka: a task already due when sent
 * is due from then (it was appended by then at the latest). */
static int64_t produced_ms;

/* Odd but valid ids: the longest, multi-byte, quotes and format
 * characters, noncharacters and C1 controls (not C0, which are bad). */
static void valid_id(valid_t *t, int i)
{
        char tail[64];
        snprintf(tail, sizeof(tail), "-%s-%d", prefix, i);
        switch (i % 8) {
        case 0: { /* 128 bytes of ASCII */
                size_t tl = strlen(tail);
                memset(t->id, 'v', KDELAY_ID_MAX - tl);
                memcpy(t->id + KDELAY_ID_MAX - tl, tail, tl + 1);
                break;
        }
        case 1: { /* 4-byte characters up to 128 bytes */
                size_t tl = strlen(tail), off = 0;
                while (off + 4 + tl <= KDELAY_ID_MAX) {
                        memcpy(t->id + off, "\xf0\x9f\x98\x80", 4);
                        off += 4;
                }
                memset(t->id + off, 'z', KDELAY_ID_MAX - tl - off);
                memcpy(t->id + KDELAY_ID_MAX - tl, tail, tl + 1);
                break;
        }
        case 2:
                snprintf(t->id, sizeof(t->id),
                         "v'); DROP TABLE kdelay_fate;--%s", tail);
                break;
        case 3:
                snprintf(t->id, sizeof(t->id), "%%s%%n%%x\\\"%s", tail);
                break;
        case 4: /* NEL (C1), BOM, U+FFFF, U+10FFFF */
                snprintf(t->id, sizeof(t->id),
                         "\xc2\x85\xef\xbb\xbf\xef\xbf\xbf\xf4\x8f\xbf\xbf%s",
                         tail);
                break;
        case 5:
                snprintf(t->id, sizeof(t->id), "with spaces = and %s", tail);
                break;
        default:
                snprintf(t->id, sizeof(t->id), "v%s", tail);
        }
}

/* The tier a producer following docs/wire-format.md picks. */
static size_t tier_for(int64_t remaining)
{
        return kd_tiers_choose(&tiers, remaining);
}

/* Valid raw tasks with a forged kdelay-not-before, a header only
 * forwarders write (a rate limit's turn): absurd, malformed, or an hour
 * after fire-at. No rule limits the targets here, so each is ignored
 * (counted, not_before_ignored) and the task fires at its fire-at. */
static int forged_not_before;

static void forge_not_before(rd_kafka_headers_t *h, const valid_t *t, int i)
{
        char nb[40];
        if (i % 7 != 3)
                return;
        switch (forged_not_before++ % 3) {
        case 0:
                snprintf(nb, sizeof(nb), "999999999999999");
                break;
        case 1:
                snprintf(nb, sizeof(nb), "soon");
                break;
        default:
                snprintf(nb, sizeof(nb), "%lld",
                         (long long)(t->fire_at + 3600000));
        }
        hadd(h, KDELAY_HDR_NOT_BEFORE, nb, -1);
}

static void send_valid_raw(rd_kafka_t *rk, int i)
{
        valid_t *t = &valids[i];
        char fire_at[40], value[32], key[32];
        valid_id(t, i);
        t->sent_ms = kd_now_ms();
        /* A few are already due (a past fire-at is valid). */
        t->fire_at = i % 50 == 7 ? t->sent_ms - 3600000
                                 : t->sent_ms + 5000 + (int64_t)pick(10000);
        t->target = i % N_TARGETS;
        /* Leading zeros are digits too. */
        snprintf(fire_at, sizeof(fire_at), i % 5 == 1 ? "000%lld" : "%lld",
                 (long long)t->fire_at);
        snprintf(value, sizeof(value), "valid-%d", i);
        snprintf(key, sizeof(key), "vk%d", i);
        t->null_kv = i % 10 == 4;
        t->dup_hdr = i % 6 == 2;
        rd_kafka_headers_t *h = rd_kafka_headers_new(8);
        junk_user_headers(h);
        if (t->dup_hdr)
                hadd(h, "test-dup", "a", -1);
        hadd(h, KDELAY_HDR_FIRE_AT, fire_at, -1);
        hadd(h, KDELAY_HDR_TARGET, targets[t->target], -1);
        if (t->dup_hdr)
                hadd(h, "test-dup", "b", -1);
        hadd(h, KDELAY_HDR_ID, t->id, -1);
        hadd(h, KDELAY_HDR_VERSION, "1", 1);
        forge_not_before(h, t, i);
        /* Every other one in a tier larger than its delay needs: still on
         * time (docs/forwarder.md, hold horizon). */
        size_t tier = tier_for(t->fire_at - t->sent_ms);
        if (i % 2)
                tier = tier + pick(tiers.cnt - tier);
        /* Behind a head that is not yet due such a task waits: late by at
         * most its tier's delay (docs/wire-format.md). */
        t->slack = tier == tier_for(t->fire_at - t->sent_ms)
                       ? 0
                       : tiers.v[tier].delay_ms;
        send_raw(rk, tier, t->null_kv ? NULL : key,
                 t->null_kv ? 0 : strlen(key), t->null_kv ? NULL : value,
                 t->null_kv ? 0 : strlen(value), h);
}

static void send_valid_library(kdelay_client_t *c, int i)
{
        valid_t *t = &valids[i];
        char value[32], key[32], errstr[512], bin[16];
        t->sent_ms = kd_now_ms();
        t->fire_at = t->sent_ms + 5000 + (int64_t)pick(10000);
        t->target = i % N_TARGETS;
        snprintf(value, sizeof(value), "valid-%d", i);
        snprintf(key, sizeof(key), "vk%d", i);
        for (size_t k = 0; k < sizeof(bin); k++)
                bin[k] = (char)pick(256);
        kdelay_header_t hs[2] = {{"test-bin", bin, sizeof(bin)},
                                 {"test-null", NULL, 0}};
        kdelay_task_t kt;
        kdelay_task_init(&kt);
        kt.topic = targets[t->target];
        kt.key = key;
        kt.key_len = strlen(key);
        kt.value = value;
        kt.value_len = strlen(value);
        kt.headers = hs;
        kt.header_cnt = 2;
        kt.fire_at_ms = t->fire_at;
        CU_ASSERT_EQUAL_FATAL(kdelay_schedule_async(c, &kt, NULL, NULL, t->id,
                                                    sizeof(t->id), errstr,
                                                    sizeof(errstr)),
                              KDELAY_OK);
}

/* --- checks --- */

/* "<stem><n>" in buf[len] with n < max: n, else -1. */
static int marker(const void *buf, size_t len, const char *stem, int max)
{
        char s[32];
        size_t sl = strlen(stem);
        if (!buf || len <= sl || len >= sizeof(s) || memcmp(buf, stem, sl))
                return -1;
        memcpy(s, buf, len);
        s[len] = '\0';
        char *end;
        long n = strtol(s + sl, &end, 10);
        return *end || n < 0 || n >= max ? -1 : (int)n;
}

static valid_t *valid_by_id(const char *id)
{
        for (int i = 0; id && i < N_VALID; i++)
                if (!strcmp(valids[i].id, id))
                        return &valids[i];
        return NULL;
}

static int header_count(const it_msg_t *m, const char *name)
{
        const void *v;
        size_t len;
        int n = 0;
        while (m->headers &&
               !rd_kafka_header_get(m->headers, (size_t)n, name, &v, &len))
                n++;
        return n;
}

static int cmp_i64(const void *a, const void *b)
{
        int64_t x = *(const int64_t *)a, y = *(const int64_t *)b;
        return x < y ? -1 : x > y;
}

/* Every dead letter is a hostile record, each once, with its reason. */
static void check_dead(void)
{
        const char *tl[] = {dead_topic, NULL};
        it_msg_t *msgs = NULL;
        size_t n = it_consume_all(tl, &msgs, 3000, 60000);
        int anonymous = 0, valid_dead = 0, wrong = 0;
        int per_reason[16] = {0};
        static const char *const reasons[] = {
            "missing-version",  "unknown-version",    "missing-id",
            "bad-id",           "missing-target",     "bad-target",
            "missing-fire-at",  "bad-fire-at",        "absurd-fire-at",
            "duplicate-header", "target-unavailable", "target-forbidden"};
        for (size_t k = 0; k < n; k++) {
                it_msg_t *m = &msgs[k];
                char *reason = it_header(m, KDELAY_HDR_DEAD_REASON);
                int h = marker(m->value, m->len, "hostile-", N_HOSTILE);
                if (h < 0)
                        h = marker(m->key, m->key_len, "hostile-",
                                   N_HOSTILE + 1);
                if (h < 0) {
                        if (marker(m->value, m->len, "valid-", N_VALID) >= 0)
                                valid_dead++;
                        else if (!m->key && !m->value)
                                anonymous++;
                        CU_ASSERT_STRING_EQUAL(reason ? reason : "-",
                                               "missing-version");
                } else {
                        hostile_t *hr = &hostiles[h];
                        hr->seen++;
                        if (!reason || strcmp(reason, hr->reason)) {
                                if (wrong++ < 20)
                                        printf("\n  hostile-%d (%s): reason "
                                               "%s, want %s",
                                               h, classes[hr->cls].name,
                                               reason ? reason : "-",
                                               hr->reason);
                        }
                        /* One reason, ours: a forged one was removed. */
                        CU_ASSERT_EQUAL(header_count(m, KDELAY_HDR_DEAD_REASON),
                                        1);
                }
                for (size_t r = 0;
                     reason && r < sizeof(reasons) / sizeof(reasons[0]); r++)
                        per_reason[r] += !strcmp(reason, reasons[r]);
                free(reason);
                it_msg_free(m);
        }
        free(msgs);
        int lost = 0, dup = 0;
        for (int i = 0; i < N_HOSTILE + 1; i++) {
                if (hostiles[i].cls == C_ALL_NULL)
                        continue;
                if (hostiles[i].seen == 0 && lost++ < 20)
                        printf("\n  hostile-%d (%s) not dead-lettered", i,
                               classes[hostiles[i].cls].name);
                if (hostiles[i].seen > 1)
                        dup++;
        }
        printf("\n  dead letters: %zu (anonymous %d); lost=%d duplicated=%d "
               "wrong_reason=%d valid_dead=%d",
               n, anonymous, lost, dup, wrong, valid_dead);
        printf("\n  per reason:");
        int unused = 0;
        for (size_t r = 0; r < sizeof(reasons) / sizeof(reasons[0]); r++) {
                printf(" %s=%d", reasons[r], per_reason[r]);
                unused += per_reason[r] == 0;
        }
        /* Every reason was given (each class is about 1/20 of the input,
         * the rarest reason about 50 records). */
        CU_ASSERT_EQUAL(unused, 0);
        CU_ASSERT_EQUAL(lost, 0);
        CU_ASSERT_EQUAL(dup, 0);
        CU_ASSERT_EQUAL(wrong, 0);
        CU_ASSERT_EQUAL(valid_dead, 0);
        CU_ASSERT_EQUAL(anonymous, n_anonymous);
        CU_ASSERT_EQUAL(n, (size_t)(N_HOSTILE + 1));
}

/* Targets hold the valid tasks only, each once, on time. */
static void check_targets(void)
{
        const char *tl[N_TARGETS + 1];
        for (int i = 0; i < N_TARGETS; i++)
                tl[i] = targets[i];
        tl[N_TARGETS] = NULL;
        it_msg_t *msgs = NULL;
        size_t n = it_consume_all(tl, &msgs, 3000, 60000);
        int foreign = 0, early = 0, bad_copy = 0;
        for (size_t k = 0; k < n; k++) {
                it_msg_t *m = &msgs[k];
                char *id = it_header(m, KDELAY_HDR_ID);
                char *fa = it_header(m, KDELAY_HDR_FIRE_AT);
                valid_t *t = valid_by_id(id);
                if (!t) {
                        if (foreign++ < 20)
                                printf("\n  foreign record on %s: id %.40s "
                                       "value %.*s",
                                       m->topic, id ? id : "-",
                                       (int)(m->len < 40 ? m->len : 40),
                                       m->value ? (char *)m->value : "-");
                } else {
                        int i = (int)(t - valids);
                        char value[32], key[32];
                        snprintf(value, sizeof(value), "valid-%d", i);
                        snprintf(key, sizeof(key), "vk%d", i);
                        if (t->delivered++ == 0)
                                t->ts = m->ts;
                        early += m->ts < t->fire_at;
                        /* Key, value, target and fire-at unchanged. */
                        int same =
                            !strcmp(m->topic, targets[t->target]) && fa &&
                            atoll(fa) == t->fire_at &&
                            (t->null_kv
                                 ? !m->key && !m->value
                                 : m->len == strlen(value) &&
                                       !memcmp(m->value, value, m->len) &&
                                       m->key_len == strlen(key) &&
                                       !memcmp(m->key, key, m->key_len)) &&
                            (!t->dup_hdr || header_count(m, "test-dup") == 2);
                        if (!same && bad_copy++ < 10)
                                printf("\n  valid-%d delivered altered", i);
                }
                free(id);
                free(fa);
                it_msg_free(m);
        }
        free(msgs);
        /* Lateness of tasks in their right tier [0] and in one too large
         * [1]; a task already due when sent from when Kafka had it. */
        static int64_t late[2][N_VALID];
        size_t nl[2] = {0, 0};
        int lost = 0, dups = 0, too_late = 0;
        for (int i = 0; i < N_VALID; i++) {
                valid_t *t = &valids[i];
                if (!t->delivered) {
                        if (lost++ < 20)
                                printf("\n  valid-%d (%s) not delivered", i,
                                       t->id);
                        continue;
                }
                dups += t->delivered > 1;
                int64_t due =
                    t->fire_at > t->sent_ms ? t->fire_at : produced_ms;
                int64_t l = t->ts - due;
                late[t->slack > 0][nl[t->slack > 0]++] = l;
                if (l > MAX_LATE_MS + t->slack)
                        too_late++;
                if (l > 1000 && !t->slack)
                        printf("\n  valid-%d late by %lld ms (fire_at %+lld ms "
                               "from sending, measured from due or acked)",
                               i, (long long)l,
                               (long long)(t->fire_at - t->sent_ms));
        }
        printf("\n  targets: %zu records; valid delivered=%zu lost=%d "
               "duplicated=%d early=%d altered=%d foreign=%d",
               n, nl[0] + nl[1], lost, dups, early, bad_copy, foreign);
        static const char *const what[2] = {"right tier", "tier too large"};
        int64_t p99[2] = {0, 0};
        for (int w = 0; w < 2; w++) {
                size_t c = nl[w];
                if (!c)
                        continue;
                qsort(late[w], c, sizeof(late[w][0]), cmp_i64);
                p99[w] = late[w][(c * 99) / 100];
                printf("\n  lateness (%s) n=%zu p50=%lldms p99=%lldms "
                       "max=%lldms",
                       what[w], c, (long long)late[w][c / 2],
                       (long long)late[w][(c * 99) / 100],
                       (long long)late[w][c - 1]);
        }
        CU_ASSERT_EQUAL(lost, 0);
        CU_ASSERT_EQUAL(dups, 0);
        CU_ASSERT_EQUAL(early, 0);
        CU_ASSERT_EQUAL(bad_copy, 0);
        CU_ASSERT_EQUAL(foreign, 0);
        CU_ASSERT_EQUAL(too_late, 0);
        /* Tasks in their right tier, among hostile records: p99 within two
         * seconds (a behaviour bound, not a benchmark: with n~230 it is
         * the third-latest task; seen 1-12 ms, single tasks up to 1.5 s
         * on a loaded 2-core machine). Each task is also within
         * MAX_LATE_MS (above). */
        CU_ASSERT(nl[0] > 0);
        CU_ASSERT(p99[0] < 2000);
}

/* Rows of this run's fate table matching where; -1 on error. */
static long count_rows(const char *where)
{
        char sql[1024];
        long n = -1;
        MYSQL *conn = it_mysql_connect();
        if (!conn)
                return -1;
        /* Its own database: IT_FATE_STATE_SQL names the tables bare. */
        snprintf(sql, sizeof(sql), "USE `%s`", db);
        if (mysql_query(conn, sql)) {
                mysql_close(conn);
                return -1;
        }
        snprintf(sql, sizeof(sql), "SELECT COUNT(*) FROM kdelay_fate WHERE %s",
                 where);
        if (!mysql_query(conn, sql)) {
                MYSQL_RES *res = mysql_store_result(conn);
                MYSQL_ROW row = res ? mysql_fetch_row(res) : NULL;
                if (row && row[0])
                        n = atol(row[0]);
                if (res)
                        mysql_free_result(res);
        }
        mysql_close(conn);
        return n;
}

/* Counts the lines of s that contain needle. */
static int lines_with(const char *s, const char *needle)
{
        int n = 0;
        for (const char *l = s; l && *l;) {
                const char *nl = strchr(l, '\n');
                size_t len = nl ? (size_t)(nl - l) + 1 : strlen(l);
                char line[1024];
                snprintf(line, sizeof(line), "%.*s", (int)len, l);
                n += strstr(line, needle) != NULL;
                l += len;
        }
        return n;
}

/* kdelayctl dead replay: malformed dead letters are refused; once the
 * missing target exists, the target-unavailable ones are scheduled again
 * and delivered once each; a second replay schedules nothing. */
static void replay_dead(const char *xp, int missing)
{
        char *out = NULL, *err = NULL;
        char *refused[] = {
            KDELAY_CTL, "dead",   "replay",    "--reason",
            "bad-id",   "--json", "--brokers", (char *)it_brokers(),
            "--mysql",  url,      "-X",        (char *)xp,
            NULL};
        CU_ASSERT_EQUAL(it_run(refused, NULL, &out, &err), 1);
        int n_refused = lines_with(out, "\"REFUSED\"");
        CU_ASSERT(n_refused > 0);
        CU_ASSERT_EQUAL(lines_with(out, "\"REPLAYED\""), 0);
        free(out);
        free(err);
        CU_ASSERT_EQUAL_FATAL(it_create_topic(missing_topic, 2), 0);
        char *replay[] = {KDELAY_CTL,
                          "dead",
                          "replay",
                          "--reason",
                          "target-unavailable",
                          "--brokers",
                          (char *)it_brokers(),
                          "--mysql",
                          url,
                          "-X",
                          (char *)xp,
                          NULL};
        CU_ASSERT_EQUAL(it_run(replay, NULL, &out, &err), 0);
        int replayed = lines_with(out, " REPLAYED ");
        CU_ASSERT_EQUAL(replayed, missing);
        free(out);
        free(err);
        const char *tl[] = {missing_topic, NULL};
        size_t got = it_wait_records(tl, (size_t)missing, 30000);
        CU_ASSERT_EQUAL(it_run(replay, NULL, &out, &err), 0);
        int again = lines_with(out, " SKIPPED ");
        CU_ASSERT_EQUAL(again, missing);
        CU_ASSERT_EQUAL(lines_with(out, " REPLAYED "), 0);
        free(out);
        free(err);
        size_t total = it_wait_records(tl, (size_t)missing + 1, 3000);
        printf("\n  dead replay: refused %d malformed, replayed %d, delivered "
               "%zu (%zu after a second replay, which skipped %d)",
               n_refused, replayed, got, total, again);
        CU_ASSERT_EQUAL(got, (size_t)missing);
        CU_ASSERT_EQUAL(total, (size_t)missing);
}

static void test_hostile_input(void)
{
        int64_t start = kd_mono_ms();
        fwd_start();
        CU_ASSERT_EQUAL_FATAL(
            it_wait_log(fwd.log, "event=partitions_assigned count=", 30000), 0);

        rd_kafka_t *rk = raw_producer();
        CU_ASSERT_PTR_NOT_NULL_FATAL(rk);
        kdelay_client_t *c = NULL;
        char errstr[512];
        CU_ASSERT_EQUAL_FATAL(kdelay_client_new(&c, it_conf_new(prefix, url),
                                                errstr, sizeof(errstr)),
                              KDELAY_OK);
        /* One valid task after every ten hostile records. */
        int nv = 0;
        for (int n = 0; n < N_HOSTILE; n++) {
                send_hostile(rk, n);
                if (n % (N_HOSTILE / N_VALID) != N_HOSTILE / N_VALID - 1)
                        continue;
                if (nv % 3 == 0)
                        send_valid_library(c, nv);
                else
                        send_valid_raw(rk, nv);
                nv++;
        }
        CU_ASSERT_EQUAL(nv, N_VALID);
        send_oversize(rk);
        CU_ASSERT_EQUAL(rd_kafka_flush(rk, 30000), 0);
        CU_ASSERT_EQUAL(kdelay_flush(c, 30000), KDELAY_OK);
        produced_ms = kd_now_ms();
        rd_kafka_destroy(rk);
        kdelay_client_destroy(c);
        printf("\n  produced %d hostile + %d valid records in %lld ms",
               N_HOSTILE, N_VALID, (long long)(kd_mono_ms() - start));

        /* Wait for the events: every valid task on a target and every
         * hostile record on the dead topic; then read everything again to
         * check it (a read that stops after 3 s of silence). */
        const char *tl[N_TARGETS + 1] = {targets[0], targets[1], NULL};
        const char *dl[] = {dead_topic, NULL};
        static it_msg_t msgs[N_HOSTILE + 1];
        size_t got = it_consume(tl, msgs, N_VALID, 60000);
        for (size_t k = 0; k < got; k++)
                it_msg_free(&msgs[k]);
        got = it_consume(dl, msgs, (size_t)(N_HOSTILE + 1), 60000);
        for (size_t k = 0; k < got; k++)
                it_msg_free(&msgs[k]);
        check_targets();
        check_dead();
        /* Claimed tasks whose target is missing: fate DEAD, with the
         * reason, none left FIRING (a cancel of one answers DEAD). */
        int missing = 0;
        for (int i = 0; i < N_HOSTILE; i++)
                missing += hostiles[i].cls == C_TARGET_MISSING;
        long dead_rows = -1;
        for (int64_t end = kd_now_ms() + 10000; kd_now_ms() < end;) {
                dead_rows = count_rows("state = 'DEAD' AND dead_reason = "
                                       "'target-unavailable'");
                if (dead_rows >= missing)
                        break;
                usleep(200 * 1000);
        }
        printf("\n  target-missing tasks: %d, DEAD rows: %ld, FIRING rows: %ld",
               missing, dead_rows, count_rows(IT_FATE_STATE_SQL " = 'FIRING'"));
        CU_ASSERT_EQUAL(dead_rows, missing);
        /* Delivered rows a run covers read FIRED (docs/fate-protocol.md,
         * "Runs of delivered claims"). */
        CU_ASSERT_EQUAL(count_rows(IT_FATE_STATE_SQL " = 'FIRING'"), 0);
        /* kdelayctl dead list reads them all, and filters by reason. */
        char xp[96], *out = NULL, *err = NULL, want[96];
        snprintf(xp, sizeof(xp), "topic_prefix=%s", prefix);
        char *dl_all[] = {KDELAY_CTL, "dead",      "list",
                          "--since",  "1h",        "--limit",
                          "1",        "--brokers", (char *)it_brokers(),
                          "-X",       xp,          NULL};
        CU_ASSERT_EQUAL(it_run(dl_all, NULL, &out, &err), 0);
        snprintf(want, sizeof(want), "dead letters in the last 1h: %d ",
                 N_HOSTILE + 1);
        CU_ASSERT_PTR_NOT_NULL(out && strstr(out, want));
        printf("\n  kdelayctl dead list: %s",
               out && strchr(out, '\n') ? strchr(out, '\n') + 1 : "-");
        free(out);
        free(err);
        char *dl_reason[] = {
            KDELAY_CTL,           "dead",    "list", "--reason",
            "target-unavailable", "--limit", "0",    "--brokers",
            (char *)it_brokers(), "-X",      xp,     NULL};
        CU_ASSERT_EQUAL(it_run(dl_reason, NULL, &out, &err), 0);
        int lines = 0;
        for (const char *ch = out; ch && *ch; ch++)
                lines += *ch == '\n';
        CU_ASSERT_EQUAL(lines, missing + 2); /* the header, the summary */
        free(out);
        free(err);
        replay_dead(xp, missing);
        /* Nothing reached the topic allowed_targets forbids. */
        const char *fl[] = {forbidden_topic, NULL};
        CU_ASSERT_EQUAL(it_wait_records(fl, 1, 1000), 0);

        /* Still alive after all of it, and a clean stop. */
        CU_ASSERT_EQUAL(it_wait_pid(fwd.pid, 0), -1);
        kill(fwd.pid, SIGTERM);
        CU_ASSERT_EQUAL(it_wait_pid(fwd.pid, 60000), 0);
        /* Each forged kdelay-not-before ignored once (a hop drops it), and
         * its task on time with the others (check_targets). */
        int64_t ignored = it_log_sum(fwd.log, "event=forwarder_stopped ",
                                     "not_before_ignored");
        printf("\n  forged kdelay-not-before: %d sent, %lld ignored, "
               "%d logged",
               forged_not_before, (long long)ignored,
               it_log_count(fwd.log, "event=not_before_ignored "));
        CU_ASSERT(forged_not_before > 0);
        CU_ASSERT_EQUAL(ignored, forged_not_before);
        CU_ASSERT(it_log_count(fwd.log, "event=not_before_ignored ") >= 1);
        printf("\n  took %lld ms; forwarder log: %s\n",
               (long long)(kd_mono_ms() - start), fwd.log);
}

int main(void)
{
        static const kd_test_case_t cases[] = {KD_TEST(test_hostile_input),
                                               KD_TEST_END};
        return kd_test_run("hostile", cases, suite_init, suite_cleanup);
}
