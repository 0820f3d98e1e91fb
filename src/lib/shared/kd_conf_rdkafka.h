/* SPDX-License-Identifier: Apache-2.0 */
/* The librdkafka pass-through settings of the configuration object
 * (conf_rdkafka.c): the properties set by -X and `kafka = [...]`, and those
 * of the kafka_config file. For the conf_*.c files only; the modules use
 * kd_conf.h's kd_conf_rk_conf, kd_conf_brokers and kd_conf_kafka_value. */
#ifndef KD_CONF_RDKAFKA_H
#define KD_CONF_RDKAFKA_H

#include <stddef.h>

#include "kd_conf.h"

/* Records pass-through property name = value in conf->kafka_kv, replacing
 * an earlier value. KDELAY_ERR_NO_MEMORY or KDELAY_OK. */
kdelay_err_t kd_conf_kv_put(kdelay_conf_t *conf, const char *name,
                            const char *value);

/* Frees cnt strings of kv and kv. */
void kd_conf_kv_free(char **kv, size_t cnt);

/* Reads the Kafka client properties file at path (none when "") in place
 * of the one read before (kafka_config). */
kdelay_err_t kd_conf_kfile_load(kdelay_conf_t *conf, const char *path,
                                char *errstr, size_t errstr_size);

#endif
