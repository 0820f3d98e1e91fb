/* SPDX-License-Identifier: Apache-2.0 */
/* A forwarder made but never run, for unit tests of its stages: brokers
 * at 127.0.0.1:1 (never contacted), an in-memory fate store. */
#ifndef KD_FWD_OFFLINE_H
#define KD_FWD_OFFLINE_H

#include "kd_fwd.h"

/* 0 and *fp (the caller's, kd_fwd_destroy frees it), or -1. */
int kd_test_fwd_offline(kd_fwd_t **fp, const char *instance);

#endif
