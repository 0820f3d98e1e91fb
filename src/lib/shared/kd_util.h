/* SPDX-License-Identifier: Apache-2.0 */
/* Small helpers shared by every libkdelay module. */
#ifndef KD_UTIL_H
#define KD_UTIL_H

#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>

#include <kdelay/error.h>

#define KD_ARRAY_LEN(a) (sizeof(a) / sizeof((a)[0]))

#if defined(__GNUC__)
#define KD_PRINTF(f, a) __attribute__((format(printf, f, a)))
#else
#define KD_PRINTF(f, a)
#endif

/* Formats into errstr (when non-NULL and errstr_size > 0) and returns err,
 * so error paths read `return kd_fail(err, errstr, size, "...", ...);`. */
kdelay_err_t kd_fail(kdelay_err_t err, char *errstr, size_t errstr_size,
                     const char *fmt, ...) KD_PRINTF(4, 5);

/* Wall-clock time, milliseconds since the Unix epoch. */
int64_t kd_now_ms(void);
/* Makes kd_now_ms() run ms ahead of the host's clock (negative: behind):
 * a clock-skew test aid of the forwarder (KDELAY_TEST_CLOCK_OFFSET_MS). */
void kd_clock_offset_set(int64_t ms);

/* Monotonic time in milliseconds (for deadlines, never for due times). */
int64_t kd_mono_ms(void);

/* Sleeps ms milliseconds (none when ms <= 0), all of them: a signal
 * meanwhile does not cut it short. */
void kd_sleep_ms(int64_t ms);

/* A malloc'ed copy of n bytes at p (caller frees); NULL for p NULL or out of
 * memory (n 0 gives a valid 1-byte block). */
void *kd_memdup(const void *p, size_t n);

/* Copies src into dst (size dst_size), truncating; always terminates. */
void kd_strlcpy(char *dst, const char *src, size_t dst_size);

/* Length of the character at s, at most n bytes (n >= 1) of which are
 * readable, with its code point in *cp: 1 for an ASCII byte (NUL
 * included), 2..4 for a well-formed UTF-8 sequence (Unicode table 3-7: no
 * overlong forms, no surrogates, nothing above U+10FFFF); 0 when the bytes
 * at s are not one (a stray continuation byte, C0, C1, F5..FF, an overlong
 * form, a surrogate, a sequence cut short by n or by a byte that does not
 * continue it, such as a NUL). */
size_t kd_utf8_seq(const unsigned char *s, size_t n, uint32_t *cp);

/* Parses a decimal int64 without sign/space; 0 on success, -1 otherwise. */
int kd_parse_i64(const char *s, size_t len, int64_t *out);

#endif
