/* SPDX-License-Identifier: Apache-2.0 */
/* Task id generation: ULIDs (48-bit ms time + 80 random bits, Crockford
 * base32, 26 chars), monotonic within a process: ids from one process sort
 * in generation order, and across processes in millisecond order. */
#ifndef KD_TASKID_H
#define KD_TASKID_H

#include <stddef.h>
#include <stdint.h>

#include <kdelay/error.h>

/* Writes a new NUL-terminated id into buf (>= KDELAY_ID_GEN_LEN + 1 bytes).
 * Thread-safe. Fails only when the system's random source fails. */
kdelay_err_t kd_taskid_generate(char *buf, size_t buf_size);

/* The same at a given time and with given entropy; for tests and for the
 * generator itself. `state` carries the monotonic counter between calls. */
typedef struct kd_taskid_state {
        int64_t last_ms;
        uint8_t rand[10];
} kd_taskid_state_t;

kdelay_err_t kd_taskid_next(kd_taskid_state_t *state, int64_t now_ms,
                            const uint8_t fresh_rand[10], char *buf,
                            size_t buf_size);

#endif
