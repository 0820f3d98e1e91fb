/* SPDX-License-Identifier: Apache-2.0 */
/* Task ids read from a stream, one a line (ctl_idlines.h). */
#include "ctl_idlines.h"

#include <string.h>

void kd_ctl_idlines_init(kd_ctl_idlines_t *r, FILE *in)
{
        memset(r, 0, sizeof(*r));
        r->in = in;
}

static int is_blank(char c)
{
        return c == ' ' || c == '\t';
}

/* The id in buf[0, len) without the blanks around it, NUL-terminated in
 * place; SKIP when blank or a comment. */
static kd_ctl_idline_t id_of(char *buf, size_t len, const char **idp)
{
        if (len && buf[len - 1] == '\r')
                len--;
        while (len && is_blank(buf[len - 1]))
                len--;
        buf[len] = '\0';
        char *id = buf;
        while (is_blank(*id))
                id++;
        if (!*id || *id == '#')
                return KD_CTL_IDLINE_SKIP;
        *idp = id;
        return KD_CTL_IDLINE_ID;
}

kd_ctl_idline_t kd_ctl_idlines_next(kd_ctl_idlines_t *r, const char **idp)
{
        size_t len = 0;
        int c, any = 0, nul = 0, over = 0;
        /* Byte by byte to the newline: a NUL byte is data here, and the
         * buffer stays bounded however long the line. */
        while ((c = getc(r->in)) != EOF) {
                any = 1;
                if (c == '\n')
                        break;
                nul |= c == '\0';
                if (len < KD_CTL_IDLINE_MAX + 1)
                        r->buf[len++] = (char)c;
                else
                        over = 1;
        }
        if (c == EOF && ferror(r->in))
                return KD_CTL_IDLINE_ERROR;
        if (!any)
                return KD_CTL_IDLINE_EOF;
        r->line++;
        if (nul)
                return KD_CTL_IDLINE_NUL;
        /* One byte more than the longest line fits: a '\r' before the
         * newline. */
        if (len == KD_CTL_IDLINE_MAX + 1 && r->buf[len - 1] != '\r')
                over = 1;
        if (over)
                return KD_CTL_IDLINE_TOO_LONG;
        return id_of(r->buf, len, idp);
}
