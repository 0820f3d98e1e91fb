/* SPDX-License-Identifier: Apache-2.0 */
/* The kdelay property table (conf_props.c): each property's name, type,
 * field of the configuration object, default and reference text, and the
 * setter that checks a value and stores it in its field. For the conf_*.c
 * files only: the public API is kdelay_conf_* (conf.c), the reference
 * writer conf_doc.c, the libconfig reader conf_file.c. */
#ifndef KD_CONF_PROPS_H
#define KD_CONF_PROPS_H

#include <stddef.h>

#include "kd_conf.h"

/* A property's type: its field's, and what kd_prop_set accepts. The text
 * types (up to KD_PROP_MYSQLURL) keep the value as given, which
 * kdelay_conf_get reads back; those marked "parsed" also keep its parsed
 * form in the named field of kdelay_conf_s, set with the text (one
 * property per such type). */
typedef enum kd_prop_type {
        KD_PROP_STRING,   /* char * */
        KD_PROP_SECRET,   /* char *, read back as "***" */
        KD_PROP_TOPICPFX, /* char *, must make valid topic names */
        KD_PROP_SSLMODE,  /* char *, parsed: mysql_ssl_mode_id */
        KD_PROP_TARGETS,  /* char *, parsed: fwd_targets */
        KD_PROP_RATES,    /* char *, parsed: fwd_rate_rules */
        KD_PROP_LISTEN,   /* char *, parsed: fwd_http_addr */
        KD_PROP_KFILE,    /* char *, a Kafka client properties file, read */
        KD_PROP_MYSQLURL, /* char *, parsed: mysql_params */
        KD_PROP_INT,      /* int, >= min */
        KD_PROP_BYTES,    /* int64_t, >= min */
        KD_PROP_DURATION, /* int64_t ms */
        KD_PROP_TIERS,    /* kd_tiers_t */
        KD_PROP_DELIVERY, /* kd_delivery_t */
        KD_PROP_OUTAGE,   /* kd_outage_policy_t */
        KD_PROP_MARKS     /* kd_fate_marks_t */
} kd_prop_type_t;

typedef struct kd_prop {
        const char *name;
        kd_prop_type_t type;
        size_t offset;
        const char *def;   /* default as text; NULL = unset */
        int min;           /* KD_PROP_INT and KD_PROP_BYTES only */
        const char *help;  /* one line of markdown, no '|', for the reference */
        const char *unset; /* reference's default cell when def is NULL;
                              NULL = "—" */
} kd_prop_t;

/* Non-zero when p's field is a char * (the types before KD_PROP_INT): the
 * fields kdelay_conf_dup copies and kdelay_conf_destroy frees. */
#define KD_PROP_IS_TEXT(p) ((p)->type <= KD_PROP_MYSQLURL)

/* What kd_prop_set accepts, and what the reference says it does. */
#define KD_PROP_INT_MAX     1000000
#define KD_PROP_BYTES_MAX   (1LL << 40) /* "2^40" in messages */
#define KD_TOPIC_PREFIX_MAX 200         /* room for "<prefix>.tier.<tier>" */

/* Every kdelay property, kd_props_cnt of them, in the reference's order. */
extern const kd_prop_t kd_props[];
extern const size_t kd_props_cnt;

/* The property called name; NULL when there is none. */
const kd_prop_t *kd_prop_find(const char *name);

/* The names a KD_PROP_DELIVERY, KD_PROP_OUTAGE or KD_PROP_MARKS property
 * takes, in its enum's order, NULL after the last. */
const char *const *kd_prop_choice_names(kd_prop_type_t type);

/* Those names as "a, b or c" into buf (size bytes), each between two
 * quote strings ("" for none). */
void kd_prop_choice_list(kd_prop_type_t type, const char *quote, char *buf,
                         size_t size);

/* Checks value (a plain one: an env:/file: reference is resolved by the
 * caller) against p and stores it in p's field of conf, replacing the one
 * before. KDELAY_OK, or an error with the property and why in errstr. */
kdelay_err_t kd_prop_set(kdelay_conf_t *conf, const kd_prop_t *p,
                         const char *value, char *errstr, size_t errstr_size);

#endif
