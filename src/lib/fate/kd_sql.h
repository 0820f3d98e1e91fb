/* SPDX-License-Identifier: Apache-2.0 */
/* SQL statements as text: a growable buffer that remembers running out of
 * memory (checked once, before the statement is sent), with ids written
 * as hex literals so that no byte of an id can be mistaken for SQL. */
#ifndef KD_SQL_H
#define KD_SQL_H

#include <stddef.h>
#include <stdint.h>

#include "kd_util.h"

typedef struct kd_sql {
        char *buf; /* owned: free() it */
        size_t len, cap;
        int oom; /* an append ran out of memory: send nothing */
} kd_sql_t;

void kd_sql_add(kd_sql_t *s, const char *fmt, ...) KD_PRINTF(2, 3);
/* Appends X'hex' for the id bytes. */
void kd_sql_add_hex(kd_sql_t *s, const char *id, size_t len);
/* Appends "X'..',X'..')" for ids: the rest of a "task_id IN (" list. */
void kd_sql_add_id_list(kd_sql_t *s, const char *const *ids, const size_t *lens,
                        size_t n);
/* A result column as a number; -1 for NULL. */
int64_t kd_sql_col_i64(const char *s);

#endif
