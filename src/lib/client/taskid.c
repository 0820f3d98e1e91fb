/* SPDX-License-Identifier: Apache-2.0 */
/* Task id generation: monotonic ULIDs. */
#include "kd_taskid.h"

#include <pthread.h>
#include <string.h>
#include <sys/random.h>

#include <kdelay/kdelay.h>

#include "kd_util.h"

static const char kd_b32[] = "0123456789ABCDEFGHJKMNPQRSTVWXYZ";

/* Adds one to the 80-bit big-endian counter; 0 on overflow. */
static int rand_increment(uint8_t r[10])
{
        for (int i = 9; i >= 0; i--) {
                if (++r[i] != 0)
                        return 1;
        }
        return 0;
}

kdelay_err_t kd_taskid_next(kd_taskid_state_t *state, int64_t now_ms,
                            const uint8_t fresh_rand[10], char *buf,
                            size_t buf_size)
{
        if (buf_size < KDELAY_ID_GEN_LEN + 1 || now_ms < 0 ||
            now_ms >= (1LL << 48))
                return KDELAY_ERR_INVALID_ARG;
        if (now_ms <= state->last_ms) {
                /* Same (or a stepped-back) millisecond: keep the last time
                 * and count up, so ids stay strictly increasing. */
                if (!rand_increment(state->rand)) {
                        state->last_ms++;
                        memcpy(state->rand, fresh_rand, 10);
                }
        } else {
                state->last_ms = now_ms;
                memcpy(state->rand, fresh_rand, 10);
        }
        /* 128 bits: 48 time + 80 random, written as 26 base32 digits (the
         * first digit carries only 3 bits). */
        uint8_t bin[16];
        uint64_t t = (uint64_t)state->last_ms;
        for (int i = 5; i >= 0; i--) {
                bin[i] = (uint8_t)(t & 0xFF);
                t >>= 8;
        }
        memcpy(bin + 6, state->rand, 10);
        for (int d = 0; d < KDELAY_ID_GEN_LEN; d++) {
                /* Digit d covers bits [128 - 5*(26-d), ...) of bin, from the
                 * top; bit offset of its lowest bit from the end: */
                int shift = 5 * (KDELAY_ID_GEN_LEN - 1 - d);
                unsigned v = 0;
                for (int b = 4; b >= 0; b--) {
                        int bit = shift + b; /* bit index from the LSB */
                        if (bit >= 128)
                                continue;
                        int byte = 15 - bit / 8;
                        v = (v << 1) | ((bin[byte] >> (bit % 8)) & 1u);
                }
                buf[d] = kd_b32[v];
        }
        buf[KDELAY_ID_GEN_LEN] = '\0';
        return KDELAY_OK;
}

static pthread_mutex_t kd_taskid_lock = PTHREAD_MUTEX_INITIALIZER;
static kd_taskid_state_t kd_taskid_global;

kdelay_err_t kd_taskid_generate(char *buf, size_t buf_size)
{
        uint8_t fresh[10];
        if (getrandom(fresh, sizeof(fresh), 0) != (ssize_t)sizeof(fresh))
                return KDELAY_ERR_SYSTEM;
        pthread_mutex_lock(&kd_taskid_lock);
        kdelay_err_t err = kd_taskid_next(&kd_taskid_global, kd_now_ms(), fresh,
                                          buf, buf_size);
        pthread_mutex_unlock(&kd_taskid_lock);
        return err;
}
