/* SPDX-License-Identifier: Apache-2.0 */
/* libFuzzer target for the time parsers people type into: durations
 * (kdelay_duration_parse and _format, src/lib/shared/duration.c) and
 * kdelayctl's absolute times for --at (kd_ctl_time_parse and _format,
 * src/ctl/ctl_time.c). Each answer is checked against a reference model
 * written from the documentation (include/kdelay/kdelay.h,
 * src/ctl/ctl_time.h), and what is formatted must parse back.
 *
 * Input: byte 0 picks the parser (its value mod 3), the rest is its input:
 *
 *   0  duration text; on success, the canonical form must parse to the
 *      same value and format to itself;
 *   1  an absolute time text (epoch milliseconds or RFC 3339), compared
 *      with the model; on success, its RFC 3339 form parses back;
 *   2  8 bytes of int64: each formatted as a duration and as an absolute
 *      time, into a whole and into a small buffer (size from byte 9).
 *
 * Built with libFuzzer when KDELAY_FUZZ=ON (scripts/fuzz.sh); always built
 * without it into tests/unit/lib/test_fuzz_regress_time, which replays
 * fuzz/corpus/time and fuzz/regress/time. */
#include <string.h>

#include <kdelay/kdelay.h>

#include "ctl_time.h"
#include "kd_fuzz.h"

/* 9999-12-31T23:59:59.999Z, the last time with a 4-digit year. */
#define FZ_TIME_MAX 253402300799999LL

/* Days from 1970-01-01 to y-m-d in the proleptic Gregorian calendar
 * (H. Hinnant's days_from_civil). */
static int64_t days_from_civil(int64_t y, int m, int d)
{
        y -= m <= 2;
        int64_t era = (y >= 0 ? y : y - 399) / 400;
        int64_t yoe = y - era * 400;
        int64_t doy = (153 * (m + (m > 2 ? -3 : 9)) + 2) / 5 + d - 1;
        int64_t doe = yoe * 365 + yoe / 4 - yoe / 100 + doy;
        return era * 146097 + doe - 719468;
}

static int days_in_month(int y, int m)
{
        static const int dm[] = {31, 28, 31, 30, 31, 30,
                                 31, 31, 30, 31, 30, 31};
        int leap = (y % 4 == 0 && y % 100 != 0) || y % 400 == 0;
        return dm[m - 1] + (m == 2 && leap);
}

/* n decimal digits at s into *v; -1 when one is not a digit. */
static int ref_digits(const char *s, int n, int *v)
{
        *v = 0;
        for (int i = 0; i < n; i++) {
                if (s[i] < '0' || s[i] > '9')
                        return -1;
                *v = *v * 10 + (s[i] - '0');
        }
        return 0;
}

/* The model of kd_ctl_time_parse: epoch milliseconds (up to 15 digits, at
 * least 1e11, smaller ones being taken for seconds) or
 * YYYY-MM-DD(T|t| )HH:MM:SS[.fraction](Z|z|(+|-)HH:MM) with a real date,
 * second 60 (a leap second) only where it does not carry into the next
 * day, milliseconds the first three fraction digits. */
static int ref_time(const char *s, int64_t *out)
{
        size_t len = strlen(s);
        if (len > 0 && strspn(s, "0123456789") == len) {
                int64_t v = 0;
                if (len > 15)
                        return -1;
                for (size_t i = 0; i < len; i++)
                        v = v * 10 + (s[i] - '0');
                if (v < 100000000000LL)
                        return -1;
                *out = v;
                return 0;
        }
        int y, mo, d, h, mi, sec;
        if (len < 20 || ref_digits(s, 4, &y) || s[4] != '-' ||
            ref_digits(s + 5, 2, &mo) || s[7] != '-' ||
            ref_digits(s + 8, 2, &d) || !strchr("Tt ", s[10]) || !s[10] ||
            ref_digits(s + 11, 2, &h) || s[13] != ':' ||
            ref_digits(s + 14, 2, &mi) || s[16] != ':' ||
            ref_digits(s + 17, 2, &sec))
                return -1;
        if (mo < 1 || mo > 12 || d < 1 || d > days_in_month(y, mo) || h > 23 ||
            mi > 59 || sec > 60 || (sec == 60 && h == 23 && mi == 59))
                return -1;
        const char *p = s + 19;
        int ms = 0;
        if (*p == '.') {
                size_t n = strspn(++p, "0123456789");
                if (n == 0)
                        return -1;
                for (size_t i = 0; i < 3; i++)
                        ms = ms * 10 + (i < n ? p[i] - '0' : 0);
                p += n;
        }
        int off = 0;
        if (*p == 'Z' || *p == 'z') {
                p++;
        } else if (*p == '+' || *p == '-') {
                int oh, om;
                if (ref_digits(p + 1, 2, &oh) || p[3] != ':' ||
                    ref_digits(p + 4, 2, &om) || oh > 23 || om > 59)
                        return -1;
                off = (oh * 60 + om) * (*p == '-' ? -1 : 1);
                p += 6;
        } else {
                return -1;
        }
        if (*p)
                return -1;
        int64_t secs = days_from_civil(y, mo, d) * 86400 + h * 3600 + mi * 60 +
                       sec - (int64_t)off * 60;
        *out = secs * 1000 + ms;
        return 0;
}

static void fuzz_duration_text(fz_in_t *in)
{
        char *text = fz_text(in);
        int64_t ms = -1;
        if (kdelay_duration_parse(text, &ms) == KDELAY_OK) {
                FZ_CHECK(ms >= 0);
                char canon[64], again[64];
                kdelay_duration_format(ms, canon, sizeof(canon));
                int64_t back = -1;
                FZ_CHECK(kdelay_duration_parse(canon, &back) == KDELAY_OK);
                FZ_CHECK(back == ms);
                kdelay_duration_format(back, again, sizeof(again));
                FZ_CHECK(strcmp(canon, again) == 0);
        }
        free(text);
}

static void fuzz_time_text(fz_in_t *in)
{
        char *text = fz_text(in);
        int64_t got = -1, want = -1;
        int rg = kd_ctl_time_parse(text, &got);
        int rw = ref_time(text, &want);
        if (rg != rw || (rg == 0 && got != want))
                fprintf(stderr,
                        "fuzz_time: \"%.80s\": parse %d (%lld), model %d "
                        "(%lld)\n",
                        text, rg, (long long)got, rw, (long long)want);
        FZ_CHECK(rg == rw);
        if (rg == 0) {
                FZ_CHECK(got == want);
                if (got >= 0 && got <= FZ_TIME_MAX) {
                        char iso[64];
                        int64_t back = -1;
                        kd_ctl_time_format(got, iso, sizeof(iso));
                        FZ_CHECK(kd_ctl_time_parse(iso, &back) == 0);
                        FZ_CHECK(back == got);
                }
        }
        free(text);
}

static void fuzz_formats(fz_in_t *in)
{
        int64_t v = (int64_t)fz_u64(in, 8);
        size_t small = fz_byte(in) % 24 + 1;
        char whole[64], *buf = malloc(small); /* exact, for ASan */
        FZ_CHECK(buf);
        int64_t back = -1;

        kdelay_duration_format(v, whole, sizeof(whole));
        FZ_CHECK(strlen(whole) < sizeof(whole));
        if (v >= 0) {
                FZ_CHECK(kdelay_duration_parse(whole, &back) == KDELAY_OK);
                FZ_CHECK(back == v);
        }
        kdelay_duration_format(v, buf, small);
        FZ_CHECK(memchr(buf, '\0', small) != NULL);

        kd_ctl_time_format(v, whole, sizeof(whole));
        FZ_CHECK(strlen(whole) < sizeof(whole));
        if (v >= 0 && v <= FZ_TIME_MAX) {
                FZ_CHECK(kd_ctl_time_parse(whole, &back) == 0);
                FZ_CHECK(back == v);
        }
        kd_ctl_time_format(v, buf, small);
        FZ_CHECK(memchr(buf, '\0', small) != NULL);
        free(buf);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
        fz_in_t in = {data, size};
        if (size == 0)
                return 0;
        switch (fz_byte(&in) % 3) {
        case 0:
                fuzz_duration_text(&in);
                break;
        case 1:
                fuzz_time_text(&in);
                break;
        default:
                fuzz_formats(&in);
        }
        return 0;
}
