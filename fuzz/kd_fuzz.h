/* SPDX-License-Identifier: Apache-2.0 */
/* What the fuzz targets share: the entry point libFuzzer calls and a check
 * that aborts in every build type (assert() is off with NDEBUG), so a
 * wrong answer is a crash like an overflow is. */
#ifndef KD_FUZZ_H
#define KD_FUZZ_H

#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

#define FZ_CHECK(cond)                                                         \
        do {                                                                   \
                if (!(cond)) {                                                 \
                        fprintf(stderr, "%s:%d: check failed: %s\n", __FILE__, \
                                __LINE__, #cond);                              \
                        abort();                                               \
                }                                                              \
        } while (0)

/* A cursor over the fuzz input. */
typedef struct fz_in {
        const uint8_t *p;
        size_t n;
} fz_in_t;

/* The next byte, or 0 when the input is used up. */
static inline uint8_t fz_byte(fz_in_t *in)
{
        if (in->n == 0)
                return 0;
        in->n--;
        return *in->p++;
}

/* The next k (<= 8) bytes as a little-endian number; missing bytes are 0. */
static inline uint64_t fz_u64(fz_in_t *in, int k)
{
        uint64_t v = 0;
        for (int i = 0; i < k; i++)
                v |= (uint64_t)fz_byte(in) << (8 * i);
        return v;
}

/* The rest of the input as a NUL-terminated malloc'ed string (it stops at
 * the first NUL byte); aborts when out of memory. */
static inline char *fz_text(fz_in_t *in)
{
        char *s = malloc(in->n + 1);
        FZ_CHECK(s);
        for (size_t i = 0; i < in->n; i++)
                s[i] = (char)in->p[i];
        s[in->n] = '\0';
        in->p += in->n;
        in->n = 0;
        return s;
}

#endif
