/* SPDX-License-Identifier: Apache-2.0 */
/* The fate store on MySQL's kdelay_fate table (fate_mysql.c). */
#ifndef KD_FATE_MYSQL_H
#define KD_FATE_MYSQL_H

#include "kd_fate.h"

/* What kd_fate_store_new makes: conf is borrowed and must outlive the
 * store; connects on first use. */
kdelay_err_t kd_fate_mysql_new(kd_fate_store_t **storep,
                               const kdelay_conf_t *conf);

#endif
