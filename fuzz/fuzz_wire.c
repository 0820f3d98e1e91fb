/* SPDX-License-Identifier: Apache-2.0 */
/* libFuzzer target for the parsers of untrusted input in src/lib: the wire
 * format decoder (kd_wire_decode on headers built from the input), the
 * duration parser and formatter, the tier list parser and the MySQL URL
 * parser. Each run checks the results against the documented rules
 * (docs/wire-format.md, include/kdelay/kdelay.h) with a reference model
 * written independently of the code under test, and aborts on any
 * difference, so a wrong answer is a crash like an overflow is.
 *
 * Input: byte 0 picks the parser (its value mod 4), the rest is its input:
 *
 *   0  headers: 8 bytes `now` (little endian, for the second decode), then
 *      records [op][length][value]: op bits 0-2 choose the name
 *      (kdelay-v, kdelay-id, kdelay-target, kdelay-fire-at, a user header,
 *      a name taken from the input, "KDELAY-ID", "kdelay-other"), bit 3
 *      makes the value null, bits 4-5 the length form (1 byte; 2 bytes;
 *      2 bytes * 4 of the next byte repeated, for huge values; the rest);
 *   1  duration text, then the formatting of an int64 into small buffers;
 *   2  a tier list, then kd_tiers_choose on int64s from the input;
 *   3  a MySQL URL and kd_parse_i64.
 *
 * fuzz_wire.dict lists the tokens of these formats for libFuzzer (-dict).
 * Built with libFuzzer when KDELAY_FUZZ=ON (scripts/fuzz.sh); always built
 * without it into tests/unit/lib/test_fuzz_regress_wire, which replays
 * fuzz/corpus/wire and fuzz/regress/wire through LLVMFuzzerTestOneInput. */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <librdkafka/rdkafka.h>

#include <kdelay/kdelay.h>

#include "kd_mysql.h"
#include "kd_tiers.h"
#include "kd_util.h"
#include "kd_wire.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

/* An invariant; checked in every build type (assert() is off with NDEBUG). */
#define FZ_CHECK(cond)                                                         \
        do {                                                                   \
                if (!(cond)) {                                                 \
                        fprintf(stderr,                                        \
                                "fuzz_wire: %s:%d: check failed: %s\n",        \
                                __FILE__, __LINE__, #cond);                    \
                        abort();                                               \
                }                                                              \
        } while (0)

/* A fixed wall clock for the first decode: 2026-01-01T00:00:00Z. */
#define FZ_NOW_FIXED 1767225600000LL

/* --- reference model of docs/wire-format.md ---------------------------------
 */

/* Well-formed UTF-8 by the byte ranges of Unicode table 3-7, without C0
 * controls or DEL; 0 when not. */
static int ref_utf8_ok(const unsigned char *s, size_t n)
{
        size_t i = 0;
        while (i < n) {
                unsigned char c = s[i];
                unsigned char lo = 0x80, hi = 0xBF;
                size_t more;
                if (c < 0x20 || c == 0x7F)
                        return 0;
                if (c < 0x80) {
                        i++;
                        continue;
                }
                if (c >= 0xC2 && c <= 0xDF) {
                        more = 1;
                } else if (c >= 0xE0 && c <= 0xEF) {
                        more = 2;
                        if (c == 0xE0)
                                lo = 0xA0;
                        if (c == 0xED)
                                hi = 0x9F; /* no surrogates */
                } else if (c >= 0xF0 && c <= 0xF4) {
                        more = 3;
                        if (c == 0xF0)
                                lo = 0x90;
                        if (c == 0xF4)
                                hi = 0x8F; /* <= U+10FFFF */
                } else {
                        return 0;
                }
                if (n - i - 1 < more)
                        return 0;
                /* The second byte has the narrowed range, the rest 80..BF. */
                if (s[i + 1] < lo || s[i + 1] > hi)
                        return 0;
                for (size_t k = 2; k <= more; k++)
                        if (s[i + k] < 0x80 || s[i + k] > 0xBF)
                                return 0;
                i += more + 1;
        }
        return 1;
}

static int ref_id_ok(const char *v, size_t n)
{
        return n >= 1 && n <= KDELAY_ID_MAX &&
               ref_utf8_ok((const unsigned char *)v, n);
}

static int ref_topic_ok(const char *v, size_t n)
{
        static const char ok[] = "abcdefghijklmnopqrstuvwxyz"
                                 "ABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789._-";
        if (n < 1 || n > 249 || (n == 1 && v[0] == '.') ||
            (n == 2 && v[0] == '.' && v[1] == '.'))
                return 0;
        for (size_t i = 0; i < n; i++)
                if (!v[i] || !strchr(ok, v[i]))
                        return 0;
        return 1;
}

/* Digits only, at least one, value within int64 (leading zeros allowed):
 * 0 with *out set, else -1. */
static int ref_decimal(const char *v, size_t n, int64_t *out)
{
        unsigned __int128 x = 0;
        if (n == 0)
                return -1;
        for (size_t i = 0; i < n; i++) {
                if (v[i] < '0' || v[i] > '9')
                        return -1;
                x = x * 10 + (unsigned)(v[i] - '0');
                if (x > INT64_MAX)
                        return -1;
        }
        *out = (int64_t)x;
        return 0;
}

/* The one header `name`: 1 found (value and length set), 0 absent, -1 more
 * than one. Names compare as librdkafka does (up to the first NUL). */
static int ref_header(const rd_kafka_headers_t *h, const char *name,
                      const char **vp, size_t *np)
{
        const char *hn;
        const void *v;
        size_t n;
        int found = 0;
        for (size_t i = 0; h && !rd_kafka_header_get_all(h, i, &hn, &v, &n);
             i++) {
                if (strcmp(hn, name))
                        continue;
                if (found++)
                        return -1;
                *vp = v ? v : "";
                *np = v ? n : 0;
        }
        return found;
}

/* The defect the documentation names for headers h at now_ms; fields are
 * checked in the order of the table in docs/wire-format.md. */
static kd_wire_defect_t ref_decode(const rd_kafka_headers_t *h, int64_t now_ms,
                                   kd_wire_task_t *t)
{
        static const struct {
                const char *name;
                kd_wire_defect_t missing, bad;
        } fields[] = {
            {KDELAY_HDR_VERSION, KD_WIRE_NO_VERSION, KD_WIRE_BAD_VERSION},
            {KDELAY_HDR_ID, KD_WIRE_NO_ID, KD_WIRE_BAD_ID},
            {KDELAY_HDR_TARGET, KD_WIRE_NO_TARGET, KD_WIRE_BAD_TARGET},
            {KDELAY_HDR_FIRE_AT, KD_WIRE_NO_FIRE_AT, KD_WIRE_BAD_FIRE_AT},
        };
        for (size_t f = 0; f < 4; f++) {
                const char *v = NULL;
                size_t n = 0;
                int r = ref_header(h, fields[f].name, &v, &n);
                if (r < 0)
                        return KD_WIRE_DUP_HEADER;
                if (r == 0)
                        return fields[f].missing;
                int ok;
                switch (f) {
                case 0:
                        ok = n == 1 && v[0] == '1';
                        break;
                case 1:
                        ok = ref_id_ok(v, n);
                        t->id = v, t->id_len = n;
                        break;
                case 2:
                        ok = ref_topic_ok(v, n);
                        t->target = v, t->target_len = n;
                        break;
                default:
                        ok = ref_decimal(v, n, &t->fire_at_ms) == 0;
                }
                if (!ok)
                        return fields[f].bad;
        }
        __int128 limit =
            (__int128)now_ms + KDELAY_MAX_DELAY_MS + 86400000LL; /* +1 day */
        if ((__int128)t->fire_at_ms > limit)
                return KD_WIRE_ABSURD_FIRE_AT;
        return KD_WIRE_OK;
}

/* A duration as include/kdelay/kdelay.h describes it: non-negative
 * integers each followed by a unit (ms, s, m, h, d), units strictly largest
 * first, the sum within int64. 0 with *out set, else -1. */
static int ref_duration(const char *s, int64_t *out)
{
        static const int64_t mult[] = {86400000LL, 3600000LL, 60000LL, 1000LL,
                                       1LL};
        static const char units[] = "dhms";
        __int128 total = 0;
        int last = -1;
        if (!*s)
                return -1;
        while (*s) {
                __int128 v = 0;
                const char *d = s;
                for (; *s >= '0' && *s <= '9'; s++)
                        if ((v = v * 10 + (*s - '0')) > INT64_MAX)
                                return -1;
                if (s == d || !*s)
                        return -1;
                int u;
                if (s[0] == 'm' && s[1] == 's')
                        u = 4, s += 2;
                else if (strchr(units, *s))
                        u = (int)(strchr(units, *s) - units), s++;
                else
                        return -1;
                if (u <= last)
                        return -1;
                last = u;
                if ((total += v * mult[u]) > INT64_MAX)
                        return -1;
        }
        *out = (int64_t)total;
        return 0;
}

/* --- headers ----------------------------------------------------------------
 */

/* A cursor over the input. */
typedef struct fz_in {
        const uint8_t *p;
        size_t n;
} fz_in_t;

static int take(fz_in_t *in, size_t k, const uint8_t **out)
{
        if (in->n < k)
                return -1;
        *out = in->p;
        in->p += k;
        in->n -= k;
        return 0;
}

/* Builds headers from the records described at the top of this file. */
static rd_kafka_headers_t *build_headers(fz_in_t *in, uint8_t **huge)
{
        static const char *const names[] = {
            KDELAY_HDR_VERSION, KDELAY_HDR_ID, KDELAY_HDR_TARGET,
            KDELAY_HDR_FIRE_AT, "x-user",      NULL, /* from the input */
            "KDELAY-ID",        "kdelay-other"};
        rd_kafka_headers_t *h = rd_kafka_headers_new(4);
        const uint8_t *b;
        while (take(in, 1, &b) == 0) {
                uint8_t op = b[0];
                const char *name = names[op & 7];
                size_t name_len = name ? strlen(name) : 0;
                if (!name) { /* a name of up to 15 bytes, any bytes */
                        size_t k = (op >> 4) & 0x0F;
                        if (take(in, k, &b))
                                break;
                        name = (const char *)b;
                        name_len = k;
                        op &= 0x0F; /* those bits were the name length */
                }
                const uint8_t *val = NULL;
                size_t len = 0;
                switch ((op >> 4) & 3) {
                case 0:
                        if (take(in, 1, &b))
                                goto done;
                        len = b[0];
                        if (take(in, len, &val))
                                goto done;
                        break;
                case 1:
                        if (take(in, 2, &b))
                                goto done;
                        len = (size_t)b[0] | (size_t)b[1] << 8;
                        if (take(in, len, &val))
                                goto done;
                        break;
                case 2: /* huge: up to 256 KB of one byte */
                        if (take(in, 3, &b))
                                goto done;
                        len = ((size_t)b[0] | (size_t)b[1] << 8) * 4;
                        free(*huge);
                        *huge = malloc(len ? len : 1);
                        FZ_CHECK(*huge);
                        memset(*huge, b[2], len);
                        val = *huge;
                        break;
                default: /* the rest of the input */
                        val = in->p;
                        len = in->n;
                        in->p += len;
                        in->n = 0;
                }
                /* The value is copied, so *huge may be reused. */
                if (op & 8)
                        rd_kafka_header_add(h, name, (ssize_t)name_len, NULL,
                                            0);
                else
                        rd_kafka_header_add(h, name, (ssize_t)name_len,
                                            val ? (const void *)val : "",
                                            (ssize_t)len);
        }
done:
        return h;
}

/* Decodes h at now_ms and compares with the reference model. */
static void check_decode(const rd_kafka_headers_t *h, int64_t now_ms)
{
        kd_wire_task_t got, want;
        memset(&got, 0, sizeof(got));
        memset(&want, 0, sizeof(want));
        kd_wire_defect_t d = kd_wire_decode(h, now_ms, &got);
        kd_wire_defect_t r = ref_decode(h, now_ms, &want);
        if (d != r)
                fprintf(stderr, "fuzz_wire: decode says %s, the rules %s\n",
                        kd_wire_defect_str(d), kd_wire_defect_str(r));
        FZ_CHECK(d == r);
        FZ_CHECK(strcmp(kd_wire_defect_str(d), "unknown") != 0);
        if (d != KD_WIRE_OK)
                return;
        /* The task points at the header values themselves. */
        FZ_CHECK(got.id == want.id && got.id_len == want.id_len);
        FZ_CHECK(got.target == want.target &&
                 got.target_len == want.target_len);
        FZ_CHECK(got.fire_at_ms == want.fire_at_ms && got.fire_at_ms >= 0);
        FZ_CHECK(kd_wire_id_valid(got.id, got.id_len));
        FZ_CHECK(kd_wire_topic_valid(got.target, got.target_len));
}

static void fuzz_headers(const uint8_t *data, size_t size)
{
        fz_in_t in = {data, size};
        const uint8_t *b;
        int64_t now = FZ_NOW_FIXED;
        if (take(&in, 8, &b) == 0) {
                uint64_t u = 0;
                for (int i = 7; i >= 0; i--)
                        u = u << 8 | b[i];
                memcpy(&now, &u, sizeof(now));
        }
        uint8_t *huge = NULL;
        rd_kafka_headers_t *h = build_headers(&in, &huge);
        free(huge);
        check_decode(NULL, FZ_NOW_FIXED); /* no headers at all */
        check_decode(h, FZ_NOW_FIXED);
        check_decode(h, now);
        /* The clock's extremes: a bound computed from now must not
         * overflow. */
        check_decode(h, INT64_MAX);
        check_decode(h, INT64_MIN);
        /* The validators agree with the model on every header value. */
        const char *name;
        const void *v;
        size_t n;
        for (size_t i = 0; !rd_kafka_header_get_all(h, i, &name, &v, &n); i++) {
                if (!v)
                        continue;
                FZ_CHECK(!kd_wire_id_valid(v, n) == !ref_id_ok(v, n));
                FZ_CHECK(!kd_wire_topic_valid(v, n) == !ref_topic_ok(v, n));
        }
        rd_kafka_headers_destroy(h);
}

/* --- text parsers
 * -------------------------------------------------------------
 */

/* The input as a NUL-terminated string (up to its first NUL). Caller frees. */
static char *as_text(const uint8_t *data, size_t size)
{
        char *s = malloc(size + 1);
        FZ_CHECK(s);
        memcpy(s, data, size);
        s[size] = '\0';
        return s;
}

/* Formats ms into a buffer of exactly buf_size bytes (ASan sees overruns)
 * and checks it is terminated inside. */
static void format_into(int64_t ms, size_t buf_size)
{
        char *buf = malloc(buf_size ? buf_size : 1);
        FZ_CHECK(buf);
        FZ_CHECK(kdelay_duration_format(ms, buf, buf_size) == buf);
        if (buf_size)
                FZ_CHECK(memchr(buf, '\0', buf_size) != NULL);
        free(buf);
}

static void fuzz_duration(const uint8_t *data, size_t size)
{
        char *text = as_text(data, size);
        int64_t ms = -1;
        char buf[64], again[64];
        int64_t want = -1;
        int rw = ref_duration(text, &want);
        kdelay_err_t err = kdelay_duration_parse(text, &ms);
        if ((err == KDELAY_OK) != (rw == 0))
                fprintf(stderr,
                        "fuzz_wire: duration \"%.80s\": parse %d, "
                        "the rules %d\n",
                        text, (int)err, rw);
        FZ_CHECK((err == KDELAY_OK) == (rw == 0));
        if (err == KDELAY_OK) {
                FZ_CHECK(ms == want);
                /* Non-negative; formats to text that parses to the same
                 * value and formats the same (canonical form). */
                FZ_CHECK(ms >= 0);
                kdelay_duration_format(ms, buf, sizeof(buf));
                int64_t back = -1;
                FZ_CHECK(kdelay_duration_parse(buf, &back) == KDELAY_OK);
                FZ_CHECK(back == ms);
                kdelay_duration_format(back, again, sizeof(again));
                FZ_CHECK(strcmp(buf, again) == 0);
        } else {
                FZ_CHECK(ms == -1); /* untouched on failure */
        }
        free(text);
        /* Formatting any int64 into any small buffer. */
        if (size >= 9) {
                int64_t v;
                memcpy(&v, data + size - 9, sizeof(v));
                format_into(v, data[size - 1] % 40);
                kdelay_duration_format(v, buf, sizeof(buf));
                if (v > 0) {
                        int64_t back = -1;
                        FZ_CHECK(kdelay_duration_parse(buf, &back) ==
                                     KDELAY_OK &&
                                 back == v);
                        /* A negative value is "-" and the positive text. */
                        kdelay_duration_format(-v, again, sizeof(again));
                        FZ_CHECK(again[0] == '-' &&
                                 strcmp(again + 1, buf) == 0);
                }
        }
}

static void fuzz_tiers(const uint8_t *data, size_t size)
{
        char *text = as_text(data, size);
        kd_tiers_t t;
        char errstr[256], list[KD_TIERS_MAX * (KD_TIER_NAME_MAX + 1)];
        errstr[0] = '\0';
        if (kd_tiers_parse(&t, text, errstr, sizeof(errstr)) == KDELAY_OK) {
                FZ_CHECK(t.cnt >= 1 && t.cnt <= KD_TIERS_MAX);
                for (size_t i = 0; i < t.cnt; i++) {
                        char name[KD_TIER_NAME_MAX];
                        FZ_CHECK(t.v[i].delay_ms > 0 &&
                                 t.v[i].delay_ms <= KDELAY_MAX_DELAY_MS);
                        FZ_CHECK(i == 0 ||
                                 t.v[i - 1].delay_ms < t.v[i].delay_ms);
                        kdelay_duration_format(t.v[i].delay_ms, name,
                                               sizeof(name));
                        FZ_CHECK(strcmp(name, t.v[i].name) == 0);
                        FZ_CHECK(kd_tiers_find(&t, name) == (int)i);
                }
                /* The canonical list parses to the same tiers. */
                kd_tiers_t back;
                kd_tiers_format(&t, list, sizeof(list));
                FZ_CHECK(kd_tiers_parse(&back, list, errstr, sizeof(errstr)) ==
                         KDELAY_OK);
                FZ_CHECK(back.cnt == t.cnt);
                for (size_t i = 0; i < t.cnt; i++)
                        FZ_CHECK(back.v[i].delay_ms == t.v[i].delay_ms);
                /* The tier choice follows docs/wire-format.md. */
                for (size_t off = 0; off + 8 <= size; off += 8) {
                        int64_t rem;
                        memcpy(&rem, data + off, sizeof(rem));
                        size_t c = kd_tiers_choose(&t, rem);
                        FZ_CHECK(c < t.cnt);
                        if (c > 0 || t.v[0].delay_ms <= rem)
                                FZ_CHECK(t.v[c].delay_ms <= rem);
                        FZ_CHECK(c + 1 == t.cnt || t.v[c + 1].delay_ms > rem);
                }
        } else {
                FZ_CHECK(memchr(errstr, '\0', sizeof(errstr)) != NULL);
        }
        free(text);
}

static void fuzz_url_and_number(const uint8_t *data, size_t size)
{
        char *text = as_text(data, size);
        kd_mysql_params_t p;
        char errstr[256];
        errstr[0] = '\0';
        if (kd_mysql_url_parse(text, &p, errstr, sizeof(errstr)) == KDELAY_OK) {
                FZ_CHECK(p.user && *p.user && p.host && *p.host && p.db &&
                         *p.db);
                FZ_CHECK(p.port >= 1 && p.port <= 65535);
                kd_mysql_params_clear(&p);
        } else {
                FZ_CHECK(*errstr);
        }
        free(text);
        /* kd_parse_i64 against the model, on the raw bytes. */
        int64_t got = -1, want = -1;
        int rg = kd_parse_i64((const char *)data, size, &got);
        int rw = ref_decimal((const char *)data, size, &want);
        /* kd_parse_i64 takes at most 19 digits; within that it is exact. */
        if (size <= 19)
                FZ_CHECK(rg == rw);
        if (rg == 0)
                FZ_CHECK(rw == 0 && got == want);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
        if (size == 0)
                return 0;
        switch (data[0] % 4) {
        case 0:
                fuzz_headers(data + 1, size - 1);
                break;
        case 1:
                fuzz_duration(data + 1, size - 1);
                break;
        case 2:
                fuzz_tiers(data + 1, size - 1);
                break;
        default:
                fuzz_url_and_number(data + 1, size - 1);
        }
        return 0;
}
