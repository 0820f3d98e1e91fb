/* SPDX-License-Identifier: Apache-2.0 */
/* Wire format v1: validation, header encoding and decoding of task
 * records (docs/wire-format.md). */
#include "kd_wire.h"

#include <stdio.h>
#include <string.h>

#include "kd_util.h"

static const char *const kd_defects[KD_WIRE__COUNT] = {
    [KD_WIRE_OK] = "ok",
    [KD_WIRE_NO_VERSION] = "missing-version",
    [KD_WIRE_BAD_VERSION] = "unknown-version",
    [KD_WIRE_NO_ID] = "missing-id",
    [KD_WIRE_BAD_ID] = "bad-id",
    [KD_WIRE_NO_TARGET] = "missing-target",
    [KD_WIRE_BAD_TARGET] = "bad-target",
    [KD_WIRE_NO_FIRE_AT] = "missing-fire-at",
    [KD_WIRE_BAD_FIRE_AT] = "bad-fire-at",
    [KD_WIRE_ABSURD_FIRE_AT] = "absurd-fire-at",
    [KD_WIRE_DUP_HEADER] = "duplicate-header",
};

const char *kd_wire_defect_str(kd_wire_defect_t d)
{
        return (int)d >= 0 && d < KD_WIRE__COUNT ? kd_defects[d] : "unknown";
}

/* Length of the UTF-8 sequence at s (n bytes left), 0 when invalid
 * (overlong forms, surrogates, > U+10FFFF, truncation, NUL). */
static size_t utf8_seq(const unsigned char *s, size_t n)
{
        unsigned char c = s[0];
        if (c < 0x20 || c == 0x7f)
                return 0; /* NUL and control characters */
        if (c < 0x80)
                return 1;
        size_t len;
        unsigned min;
        unsigned cp;
        if ((c & 0xE0) == 0xC0) {
                len = 2, min = 0x80, cp = c & 0x1F;
        } else if ((c & 0xF0) == 0xE0) {
                len = 3, min = 0x800, cp = c & 0x0F;
        } else if ((c & 0xF8) == 0xF0) {
                len = 4, min = 0x10000, cp = c & 0x07;
        } else {
                return 0;
        }
        if (len > n)
                return 0;
        for (size_t i = 1; i < len; i++) {
                if ((s[i] & 0xC0) != 0x80)
                        return 0;
                cp = (cp << 6) | (s[i] & 0x3F);
        }
        if (cp < min || cp > 0x10FFFF || (cp >= 0xD800 && cp <= 0xDFFF))
                return 0;
        return len;
}

int kd_wire_id_valid(const char *id, size_t len)
{
        if (!id || len == 0 || len > KDELAY_ID_MAX)
                return 0;
        const unsigned char *s = (const unsigned char *)id;
        for (size_t i = 0; i < len;) {
                size_t n = utf8_seq(s + i, len - i);
                if (n == 0)
                        return 0;
                i += n;
        }
        return 1;
}

int kd_wire_topic_internal(const char *name, size_t len)
{
        return len >= 2 && name[0] == '_' && name[1] == '_';
}

int kd_wire_topic_valid(const char *name, size_t len)
{
        if (!name || len == 0 || len > 249)
                return 0;
        if ((len == 1 && name[0] == '.') ||
            (len == 2 && name[0] == '.' && name[1] == '.'))
                return 0;
        for (size_t i = 0; i < len; i++) {
                char c = name[i];
                if (!((c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') ||
                      (c >= '0' && c <= '9') || c == '.' || c == '_' ||
                      c == '-'))
                        return 0;
        }
        return 1;
}

/* The latest epoch ms a task's times may name: now + 10 years + 1 day,
 * saturated (a clock near INT64_MAX must not overflow the bound). */
static int64_t absurd_after(int64_t now_ms)
{
        const int64_t ahead = KDELAY_MAX_DELAY_MS + 86400000LL;
        return now_ms > INT64_MAX - ahead ? INT64_MAX : now_ms + ahead;
}

kd_wire_nb_t kd_wire_not_before(const rd_kafka_headers_t *hdrs, int64_t now_ms,
                                int64_t *ms)
{
        const void *v;
        size_t len;
        *ms = 0;
        if (!hdrs ||
            rd_kafka_header_get_last(hdrs, KDELAY_HDR_NOT_BEFORE, &v, &len))
                return KD_WIRE_NB_NONE;
        const char *d = v;
        int64_t at;
        while (d && len > 1 && d[0] == '0') /* leading zeros, as fire-at */
                d++, len--;
        if (!d || kd_parse_i64(d, len, &at) != 0)
                return KD_WIRE_NB_BAD;
        if (at > absurd_after(now_ms))
                return KD_WIRE_NB_ABSURD;
        *ms = at;
        return KD_WIRE_NB_OK;
}

int kd_wire_user_header_valid(const char *name)
{
        return name && *name && strncmp(name, "kdelay-", 7) != 0;
}

/* Finds the single header `name`. Returns 1 found, 0 absent, -1 repeated. */
static int header_one(const rd_kafka_headers_t *hdrs, const char *name,
                      const char **valp, size_t *lenp)
{
        const void *v;
        size_t len;
        if (!hdrs || rd_kafka_header_get(hdrs, 0, name, &v, &len) !=
                         RD_KAFKA_RESP_ERR_NO_ERROR)
                return 0;
        const void *v2;
        size_t len2;
        if (rd_kafka_header_get(hdrs, 1, name, &v2, &len2) ==
            RD_KAFKA_RESP_ERR_NO_ERROR)
                return -1;
        *valp = v ? v : "";
        *lenp = v ? len : 0;
        return 1;
}

kd_wire_defect_t kd_wire_decode(const rd_kafka_headers_t *hdrs, int64_t now_ms,
                                kd_wire_task_t *task)
{
        const char *v;
        size_t len;
        int r;

        if ((r = header_one(hdrs, KDELAY_HDR_VERSION, &v, &len)) < 0)
                return KD_WIRE_DUP_HEADER;
        if (r == 0)
                return KD_WIRE_NO_VERSION;
        if (len != 1 || v[0] != '1')
                return KD_WIRE_BAD_VERSION;

        if ((r = header_one(hdrs, KDELAY_HDR_ID, &task->id, &task->id_len)) < 0)
                return KD_WIRE_DUP_HEADER;
        if (r == 0)
                return KD_WIRE_NO_ID;
        if (!kd_wire_id_valid(task->id, task->id_len))
                return KD_WIRE_BAD_ID;

        if ((r = header_one(hdrs, KDELAY_HDR_TARGET, &task->target,
                            &task->target_len)) < 0)
                return KD_WIRE_DUP_HEADER;
        if (r == 0)
                return KD_WIRE_NO_TARGET;
        if (!kd_wire_topic_valid(task->target, task->target_len))
                return KD_WIRE_BAD_TARGET;

        if ((r = header_one(hdrs, KDELAY_HDR_FIRE_AT, &v, &len)) < 0)
                return KD_WIRE_DUP_HEADER;
        if (r == 0)
                return KD_WIRE_NO_FIRE_AT;
        /* Digits only: leading zeros are digits too, however many. */
        while (len > 1 && v[0] == '0')
                v++, len--;
        if (kd_parse_i64(v, len, &task->fire_at_ms) != 0)
                return KD_WIRE_BAD_FIRE_AT;
        if (task->fire_at_ms > absurd_after(now_ms))
                return KD_WIRE_ABSURD_FIRE_AT;
        return KD_WIRE_OK;
}

kdelay_err_t kd_wire_encode(rd_kafka_headers_t **hdrsp, const char *id,
                            const char *target, int64_t fire_at_ms,
                            const kdelay_header_t *user, size_t user_cnt)
{
        rd_kafka_headers_t *h = rd_kafka_headers_new(user_cnt + 4);
        char fire_at[24];
        if (!h)
                return KDELAY_ERR_NO_MEMORY;
        for (size_t i = 0; i < user_cnt; i++)
                rd_kafka_header_add(h, user[i].name, -1, user[i].value,
                                    (ssize_t)user[i].value_len);
        snprintf(fire_at, sizeof(fire_at), "%lld", (long long)fire_at_ms);
        rd_kafka_header_add(h, KDELAY_HDR_ID, -1, id, -1);
        rd_kafka_header_add(h, KDELAY_HDR_TARGET, -1, target, -1);
        rd_kafka_header_add(h, KDELAY_HDR_FIRE_AT, -1, fire_at, -1);
        rd_kafka_header_add(h, KDELAY_HDR_VERSION, -1, KDELAY_WIRE_VERSION, -1);
        *hdrsp = h;
        return KDELAY_OK;
}
