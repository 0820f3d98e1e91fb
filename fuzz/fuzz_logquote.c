/* SPDX-License-Identifier: Apache-2.0 */
/* libFuzzer target for the log's quoting (kd_log_quote_mem, kd_log_quote)
 * and its cutting of long lines (kd_log_vformat, src/lib/shared/log.c):
 * whatever a value holds, what is written is one well-formed value of the line
 * format (tests/common/kd_logfields.h, a reader written from the format's
 * description), it reads back as the input (a whole-character prefix of it
 * when the buffer was too small), and it holds no control character, no
 * byte that is not UTF-8 and no invisible or bidi character.
 *
 * Input: byte 0 is the buffer size for the value (0 means 1 KB), byte 1
 * the line size for kd_log_vformat (64 + byte * 4), the rest the value
 * (any bytes, NUL too). The value is also split at its first two 0xFE
 * bytes into three values written as a line "a=... b=... c=...", which
 * must read back as those three fields, or when cut, as whole fields and
 * truncated=true.
 *
 * Built with libFuzzer when KDELAY_FUZZ=ON (scripts/fuzz.sh); always built
 * without it into tests/unit/lib/test_fuzz_regress_logquote, which replays
 * fuzz/corpus/logquote and fuzz/regress/logquote. */
#include <stdarg.h>
#include <string.h>

#include "kd_fuzz.h"
#include "kd_log.h"
#include "kd_logfields.h"

/* Nothing that could end the line or that a terminal could hide or
 * reorder: no C0 control, DEL, ill-formed UTF-8, C1 control, U+061C,
 * U+200B..U+200F, U+2028..U+202E, U+2060..U+206F or U+FEFF. */
static void check_visible(const char *s)
{
        const unsigned char *u = (const unsigned char *)s;
        size_t i = 0;
        while (u[i]) {
                unsigned char c = u[i];
                FZ_CHECK(c >= 0x20 && c != 0x7F);
                if (c < 0x80) {
                        i++;
                        continue;
                }
                size_t k = c >= 0xF0 ? 4 : c >= 0xE0 ? 3 : 2;
                FZ_CHECK(c >= 0xC2 && c <= 0xF4);
                uint32_t cp = c & (k == 2 ? 0x1F : k == 3 ? 0x0F : 0x07);
                for (size_t j = 1; j < k; j++) {
                        FZ_CHECK((u[i + j] & 0xC0) == 0x80);
                        cp = cp << 6 | (u[i + j] & 0x3F);
                }
                /* Shortest form, no surrogates, at most U+10FFFF. */
                FZ_CHECK(cp >= (k == 2 ? 0x80u : k == 3 ? 0x800u : 0x10000u));
                FZ_CHECK(cp < 0xD800 || cp > 0xDFFF);
                FZ_CHECK(cp <= 0x10FFFF);
                FZ_CHECK(!(cp <= 0x9F || cp == 0x061C ||
                           (cp >= 0x200B && cp <= 0x200F) ||
                           (cp >= 0x2028 && cp <= 0x202E) ||
                           (cp >= 0x2060 && cp <= 0x206F) || cp == 0xFEFF));
                i += k;
        }
}

/* Quotes the len bytes at v into a buffer of exactly size bytes and checks
 * what it holds; returns how many bytes of v it holds. */
static size_t check_quote(const char *v, size_t len, size_t size)
{
        char *buf = malloc(size); /* exact, for ASan */
        char *out = malloc(size);
        FZ_CHECK(buf && out);
        size_t used = kd_log_quote_mem(v, len, buf, size);
        size_t n = strnlen(buf, size);
        FZ_CHECK(n < size && used <= len);
        check_visible(buf);
        if (n == 0) {
                FZ_CHECK(size < 3 && used == 0);
        } else {
                size_t out_len = 0;
                long r = kd_logvalue_parse(buf, n, out, &out_len);
                FZ_CHECK(r == (long)n);
                FZ_CHECK(out_len == used && memcmp(out, v, used) == 0);
                /* Cut only where the buffer is too small: every byte takes
                 * at most 6 characters, plus the quotes. */
                if (size >= 6 * len + 3)
                        FZ_CHECK(used == len);
                /* Not whole: quoted, so the cut shows. */
                if (used < len)
                        FZ_CHECK(buf[0] == '"');
        }
        free(out);
        free(buf);
        return used;
}

static char *vformat(char *line, size_t size, const char *fmt, ...)
    KD_PRINTF(3, 4);
static char *vformat(char *line, size_t size, const char *fmt, ...)
{
        va_list ap;
        va_start(ap, fmt);
        kd_log_vformat(line, size, fmt, ap);
        va_end(ap);
        return line;
}

/* The three values a, b, c written as one line of line_size bytes. */
static void check_line(const char *v[3], const size_t len[3], size_t line_size)
{
        char q[3][1024];
        size_t used[3];
        for (int i = 0; i < 3; i++)
                used[i] = kd_log_quote_mem(v[i], len[i], q[i], sizeof(q[i]));
        char *line = malloc(line_size);
        FZ_CHECK(line);
        vformat(line, line_size, "event=fz a=%s b=%s c=%s", q[0], q[1], q[2]);
        FZ_CHECK(strnlen(line, line_size) < line_size);
        check_visible(line);
        size_t whole = strlen(q[0]) + strlen(q[1]) + strlen(q[2]) +
                       strlen("event=fz a= b= c=");
        kd_logfield_t f[5];
        int n = kd_logfields_parse(line, f, 5);
        FZ_CHECK(n >= 1);
        FZ_CHECK(strcmp(f[0].key, "event") == 0);
        int cut = whole >= line_size;
        FZ_CHECK(strcmp(f[n - 1].key, cut ? "truncated" : "c") == 0);
        for (int i = 1; i < n - cut; i++) {
                /* a, b, c in order, each the input or a prefix of it. */
                FZ_CHECK(f[i].key[0] == 'a' + i - 1 && !f[i].key[1]);
                FZ_CHECK(f[i].value_len <= used[i - 1]);
                FZ_CHECK(!memcmp(f[i].value, v[i - 1], f[i].value_len));
                if (!cut || i < n - 2)
                        FZ_CHECK(f[i].value_len == used[i - 1]);
        }
        kd_logfields_free(f, n);
        free(line);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
        fz_in_t in = {data, size};
        size_t buf_size = fz_byte(&in);
        size_t line_size = 64 + (size_t)fz_byte(&in) * 4;
        const char *v = (const char *)in.p;
        size_t len = in.n;

        check_quote(v, len, buf_size ? buf_size : 1024);
        check_quote(v, len, 6 * len + 3);

        /* kd_log_quote stops at the first NUL. */
        char *text = fz_text(&in);
        char q[64];
        kd_log_quote(text, q, sizeof(q));
        FZ_CHECK(strcmp(q, text) == 0 || q[0] == '"');
        free(text);

        const char *parts[3];
        size_t lens[3];
        size_t at = 0;
        for (int i = 0; i < 3; i++) {
                const char *sep = i < 2 ? memchr(v + at, 0xFE, len - at) : NULL;
                size_t end = sep ? (size_t)(sep - v) : len;
                parts[i] = v + at;
                lens[i] = end - at;
                at = sep ? end + 1 : len;
        }
        check_line(parts, lens, line_size);
        return 0;
}
