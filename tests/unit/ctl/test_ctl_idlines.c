/* SPDX-License-Identifier: Apache-2.0 */
/* kdelayctl cancel -'s line reader (src/ctl/ctl_idlines.c): each line
 * alone, whatever it holds. */
#define _POSIX_C_SOURCE 200809L
#include <stdio.h>
#include <string.h>

#include "ctl_idlines.h"
#include "kd_test.h"

typedef struct want {
        kd_ctl_idline_t kind;
        const char *id; /* KD_CTL_IDLINE_ID only */
        unsigned long line;
} want_t;

/* Reads text (len bytes, NULs included) and checks each answer against
 * want, then EOF. */
static void read_all(const char *text, size_t len, const want_t *want, size_t n)
{
        char copy[4096];
        CU_ASSERT_FATAL(len <= sizeof(copy));
        memcpy(copy, text, len);
        FILE *in = fmemopen(copy, len, "r");
        CU_ASSERT_PTR_NOT_NULL_FATAL(in);
        kd_ctl_idlines_t r;
        kd_ctl_idlines_init(&r, in);
        for (size_t i = 0; i < n; i++) {
                const char *id = NULL;
                kd_ctl_idline_t kind = kd_ctl_idlines_next(&r, &id);
                if (kind != want[i].kind)
                        fprintf(stderr, "\nanswer %zu: got %d, want %d\n", i,
                                (int)kind, (int)want[i].kind);
                CU_ASSERT_EQUAL(kind, want[i].kind);
                CU_ASSERT_EQUAL(r.line, want[i].line);
                if (want[i].id && kind == KD_CTL_IDLINE_ID)
                        CU_ASSERT_STRING_EQUAL(id, want[i].id);
        }
        const char *id;
        CU_ASSERT_EQUAL(kd_ctl_idlines_next(&r, &id), KD_CTL_IDLINE_EOF);
        CU_ASSERT_EQUAL(kd_ctl_idlines_next(&r, &id), KD_CTL_IDLINE_EOF);
        fclose(in);
}

static void test_ids_blanks_comments(void)
{
        static const char text[] = "a1\n\n# a comment\n  b2 \t\r\nc3";
        const want_t want[] = {{KD_CTL_IDLINE_ID, "a1", 1},
                               {KD_CTL_IDLINE_SKIP, NULL, 2},
                               {KD_CTL_IDLINE_SKIP, NULL, 3},
                               {KD_CTL_IDLINE_ID, "b2", 4},
                               {KD_CTL_IDLINE_ID, "c3", 5}};
        read_all(text, sizeof(text) - 1, want, 5);
        read_all("", 0, NULL, 0);
}

/* The defect: a NUL byte made the reader skip the next line's id. Now the
 * line with it alone is bad, and the next line is read, at the start, in
 * the middle and at the end of a line, and on the last line. */
static void test_nul_is_that_line_alone(void)
{
        static const char text[] = "a\0b\nid-2\n\0\nid-4\nx\0\nid-6\nlast\0";
        const want_t want[] = {
            {KD_CTL_IDLINE_NUL, NULL, 1}, {KD_CTL_IDLINE_ID, "id-2", 2},
            {KD_CTL_IDLINE_NUL, NULL, 3}, {KD_CTL_IDLINE_ID, "id-4", 4},
            {KD_CTL_IDLINE_NUL, NULL, 5}, {KD_CTL_IDLINE_ID, "id-6", 6},
            {KD_CTL_IDLINE_NUL, NULL, 7}};
        read_all(text, sizeof(text) - 1, want, 7);
}

/* A line longer than KD_CTL_IDLINE_MAX is that line alone too; one of
 * exactly the limit is an id, with or without a '\r' before its
 * newline. */
static void test_too_long_is_that_line_alone(void)
{
        char text[4096];
        size_t len = 0;
        memset(text, 'x', sizeof(text));
        len += KD_CTL_IDLINE_MAX + 1; /* one too many */
        text[len++] = '\n';
        memcpy(text + len, "next\n", 5);
        len += 5;
        len += KD_CTL_IDLINE_MAX; /* exactly the limit, CRLF */
        text[len++] = '\r';
        text[len++] = '\n';
        len += KD_CTL_IDLINE_MAX; /* exactly the limit, no newline */
        const want_t want[] = {{KD_CTL_IDLINE_TOO_LONG, NULL, 1},
                               {KD_CTL_IDLINE_ID, "next", 2},
                               {KD_CTL_IDLINE_ID, NULL, 3},
                               {KD_CTL_IDLINE_ID, NULL, 4}};
        read_all(text, len, want, 4);
        /* 2,000 bytes and a NUL: NUL wins, and the next line is read. */
        memset(text, 'y', 2000);
        text[1000] = '\0';
        memcpy(text + 2000, "\nnext\n", 6);
        const want_t want2[] = {{KD_CTL_IDLINE_NUL, NULL, 1},
                                {KD_CTL_IDLINE_ID, "next", 2}};
        read_all(text, 2006, want2, 2);
}

static const kd_test_case_t cases[] = {
    KD_TEST(test_ids_blanks_comments),
    KD_TEST(test_nul_is_that_line_alone),
    KD_TEST(test_too_long_is_that_line_alone),
    KD_TEST_END,
};

int main(void)
{
        return kd_test_run("ctl_idlines", cases, NULL, NULL);
}
