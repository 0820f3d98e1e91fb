/* SPDX-License-Identifier: Apache-2.0 */
/* Task ids read from a stream, one a line (kdelayctl cancel -). */
#ifndef KD_CTL_IDLINES_H
#define KD_CTL_IDLINES_H

#include <stdio.h>

/* The longest line taken for an id, its newline (and a '\r' before it)
 * not counted. */
#define KD_CTL_IDLINE_MAX 1023

typedef enum kd_ctl_idline {
        KD_CTL_IDLINE_EOF,      /* nothing more to read */
        KD_CTL_IDLINE_ID,       /* a line with an id */
        KD_CTL_IDLINE_SKIP,     /* a blank line or a comment ('#') */
        KD_CTL_IDLINE_TOO_LONG, /* longer than KD_CTL_IDLINE_MAX */
        KD_CTL_IDLINE_NUL,      /* holds a NUL byte */
        KD_CTL_IDLINE_ERROR     /* the stream failed (errno) */
} kd_ctl_idline_t;

typedef struct kd_ctl_idlines {
        FILE *in;           /* borrowed */
        unsigned long line; /* number of the last line read, from 1 */
        char buf[KD_CTL_IDLINE_MAX + 2];
} kd_ctl_idlines_t;

void kd_ctl_idlines_init(kd_ctl_idlines_t *r, FILE *in);

/* Reads the next line, to its newline or the end of the stream, whatever
 * it holds: a bad line (too long, a NUL byte) is that line alone, and the
 * next call reads the line after it. For KD_CTL_IDLINE_ID, *idp is the id
 * without the blanks around it, valid until the next call. */
kd_ctl_idline_t kd_ctl_idlines_next(kd_ctl_idlines_t *r, const char **idp);

#endif
