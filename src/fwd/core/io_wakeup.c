/* SPDX-License-Identifier: Apache-2.0 */
/* A queue's wake-up pipe (kd_io_wakeup.h). */
#include "kd_io_wakeup.h"

#include <fcntl.h>
#include <unistd.h>

int kd_fwd_io_wakeup(rd_kafka_queue_t *q, int fds[2])
{
        if (pipe2(fds, O_NONBLOCK | O_CLOEXEC))
                return -1;
        rd_kafka_queue_io_event_enable(q, fds[1], "1", 1);
        return 0;
}
