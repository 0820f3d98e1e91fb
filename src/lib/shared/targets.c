/* SPDX-License-Identifier: Apache-2.0 */
/* forwarder.allowed_targets: parse the list, match a target. */
#include "kd_targets.h"

#include <stdlib.h>
#include <string.h>

#include "kd_log.h"
#include "kd_util.h"
#include "kd_wire.h"

static const char kd_topic_chars[] = "abcdefghijklmnopqrstuvwxyz"
                                     "ABCDEFGHIJKLMNOPQRSTUVWXYZ"
                                     "0123456789._-";

void kd_targets_clear(kd_targets_t *t)
{
        free(t->buf);
        free(t->pat);
        memset(t, 0, sizeof(*t));
}

kdelay_err_t kd_targets_parse(kd_targets_t *t, const char *list, char *errstr,
                              size_t errstr_size)
{
        memset(t, 0, sizeof(*t));
        if (!list || !*list)
                return KDELAY_OK;
        size_t n = 1;
        for (const char *c = list; *c; c++)
                n += *c == ',';
        t->buf = strdup(list);
        t->pat = calloc(n, sizeof(*t->pat));
        if (!t->buf || !t->pat) {
                kd_targets_clear(t);
                return kd_fail(KDELAY_ERR_NO_MEMORY, errstr, errstr_size,
                               "forwarder.allowed_targets: out of memory");
        }
        char *save = NULL;
        for (char *e = strtok_r(t->buf, ",", &save); e;
             e = strtok_r(NULL, ",", &save)) {
                while (*e == ' ' || *e == '\t')
                        e++;
                size_t len = strlen(e);
                while (len && (e[len - 1] == ' ' || e[len - 1] == '\t'))
                        e[--len] = '\0';
                int prefix = len && e[len - 1] == '*';
                size_t name_len = len - (size_t)prefix;
                /* "*" alone: everything; else a topic name or its
                 * beginning. */
                int ok = len && (prefix ? strspn(e, kd_topic_chars) == name_len
                                        : kd_wire_topic_valid(e, len));
                if (!ok) {
                        char q[300];
                        kd_log_quote(e, q, sizeof(q));
                        kd_targets_clear(t);
                        return kd_fail(KDELAY_ERR_CONFIG, errstr, errstr_size,
                                       "forwarder.allowed_targets: %s is "
                                       "not a topic name or a `prefix*` "
                                       "pattern",
                                       q);
                }
                t->pat[t->cnt++] = (kd_target_pat_t){
                    .name = e, .len = name_len, .prefix = prefix};
        }
        if (!t->cnt) { /* only separators */
                kd_targets_clear(t);
                return kd_fail(KDELAY_ERR_CONFIG, errstr, errstr_size,
                               "forwarder.allowed_targets: no entry");
        }
        return KDELAY_OK;
}

int kd_targets_allow(const kd_targets_t *t, const char *topic, size_t len)
{
        if (!t->cnt)
                return 1;
        for (size_t i = 0; i < t->cnt; i++) {
                const kd_target_pat_t *p = &t->pat[i];
                if (p->prefix ? len >= p->len && !memcmp(topic, p->name, p->len)
                              : len == p->len && !memcmp(topic, p->name, len))
                        return 1;
        }
        return 0;
}
