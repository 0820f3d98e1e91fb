/* The forwarder's event loop: ask the timers and partitions for the next
 * due time, wait that long for Kafka or a signal, dispatch, repeat. */
#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <stddef.h>
#include <string.h>
#include <unistd.h>

#include "kd_fwd.h"
#include "kd_log.h"
#include "kd_util.h"

/* FIRED marks are batched over this long. */
#define KD_MARK_INTERVAL_MS 250

/* Messages handled per wake-up before timers get their turn. */
#define KD_LOOP_BATCH 2000

static kd_task_t *task_of(kd_heap_node_t *n)
{
        return (kd_task_t *)((char *)n - offsetof(kd_task_t, timer));
}

/* Fires, claims and retries whatever timer is due. */
static void run_timers(kd_fwd_t *f, int64_t now)
{
        kd_heap_node_t *n;
        while ((n = kd_heap_peek(&f->timers)) && n->key <= now) {
                kd_heap_pop(&f->timers);
                kd_task_t *t = task_of(n);
                switch (t->state) {
                case KD_TASK_HELD:
                        kd_claim_enqueue(f, t);
                        break;
                case KD_TASK_CLAIMED:
                        kd_pace_fire(f, t, now);
                        break;
                case KD_TASK_RETRY:
                        if (t->retry_as == KD_TASK_FIRING)
                                kd_produce_fire(f, t, now);
                        else if (t->retry_as == KD_TASK_HOPPING)
                                kd_produce_hop(
                                    f, t,
                                    kd_tiers_choose(&f->conf->tiers,
                                                    t->fire_at_ms - now));
                        else
                                kd_produce_dead(f, t, t->dead_reason);
                        break;
                default:
                        break;
                }
        }
}

/* One turn of every duty that is due at now. */
static void tick(kd_fwd_t *f, int64_t now)
{
        const kdelay_conf_t *c = f->conf;
        kd_part_process_all(f, now);
        kd_pace_run(f, now);
        run_timers(f, now);
        /* FIRED marks first: a claim after a MySQL outage must see the
         * deliveries made before it. */
        if ((f->fired.len > 0 || f->seen.len > 0) &&
            (f->fired.len >= (size_t)c->fwd_claim_batch ||
             now >= f->next_mark_ms)) {
                kd_claim_flush_fired(f, now);
                f->next_mark_ms = now + KD_MARK_INTERVAL_MS;
        }
        /* Claims wait up to half of claim_ahead to fill a batch, so a
         * claim still lands well before its fire time. */
        if (f->claimq.head &&
            (f->claimq.len >= (size_t)c->fwd_claim_batch ||
             now - f->claimq_since >= c->fwd_claim_ahead_ms / 2)) {
                kd_claim_flush(f, now);
                run_timers(f, kd_now_ms()); /* claims already due */
        }
        if (f->eos) {
                if (kd_txn_due_ms(f) <= now &&
                    kd_txn_commit(f) == KD_TXN_ABORTED)
                        kd_part_rewind(f);
        } else if (now >= f->next_commit_ms) {
                kd_part_commit(f, 0);
                f->next_commit_ms = now + c->fwd_commit_interval_ms;
        }
        if (c->fwd_stats_interval_ms > 0 && now >= f->next_stats_ms) {
                if (f->next_stats_ms)
                        kd_fwd_log_stats(f, "stats");
                f->next_stats_ms = now + c->fwd_stats_interval_ms;
        }
}

static int64_t min64(int64_t a, int64_t b)
{
        return a < b ? a : b;
}

/* Milliseconds until something is due, at most one second. */
static int next_timeout(const kd_fwd_t *f, int64_t now)
{
        const kdelay_conf_t *c = f->conf;
        int64_t at = now + 1000;
        const kd_heap_node_t *n = kd_heap_peek(&f->timers);
        if (n)
                at = min64(at, n->key);
        at = min64(at, kd_part_next_wake(f));
        if (f->claimq.head)
                at = min64(at, f->claimq_since + c->fwd_claim_ahead_ms / 2);
        if (f->claimq.head || f->fired.len || f->seen.len)
                at = min64(at, f->mysql_retry_ms);
        if (f->fired.len || f->seen.len)
                at = min64(at, f->next_mark_ms);
        if (f->eos)
                at = min64(at, kd_txn_due_ms(f));
        else
                at = min64(at, f->next_commit_ms);
        at = min64(at, kd_pace_next_ms(f));
        return at <= now ? 0 : (int)(at - now);
}

/* librdkafka writes a byte to fd whenever queue q turns non-empty. */
static int io_wakeup(rd_kafka_queue_t *q, int fds[2])
{
        if (pipe2(fds, O_NONBLOCK | O_CLOEXEC))
                return -1;
        rd_kafka_queue_io_event_enable(q, fds[1], "1", 1);
        return 0;
}

static void drain_fd(int fd)
{
        char buf[256];
        while (read(fd, buf, sizeof(buf)) > 0)
                ;
}

/* Serves up to KD_LOOP_BATCH consumer messages; 1 when more may wait. */
static int serve_consumer(kd_fwd_t *f)
{
        for (int i = 0; i < KD_LOOP_BATCH; i++) {
                rd_kafka_message_t *m = rd_kafka_consumer_poll(f->consumer, 0);
                if (!m)
                        return 0;
                kd_part_on_message(f, m);
                rd_kafka_message_destroy(m);
        }
        return 1;
}

static void log_start(kd_fwd_t *f)
{
        const kdelay_conf_t *c = f->conf;
        char tiers[256], horizon[32], look[32], ahead[32];
        kd_tiers_format(&c->tiers, tiers, sizeof(tiers));
        kd_log(
            c, KDELAY_LOG_NOTICE,
            "event=forwarder_start version=%s instance=%s group=%s "
            "brokers=%s tiers=%s topics=%s.tier.{%s} dead_topic=%s.dead "
            "hold_horizon=%s lookahead=%s claim_ahead=%s max_held=%d "
            "max_held_bytes=%lld delivery=%s max_fire_rate=%d",
            KDELAY_VERSION_STR, f->instance, c->fwd_group_id, c->brokers, tiers,
            c->topic_prefix, tiers, c->topic_prefix,
            kdelay_duration_format(c->fwd_hold_horizon_ms, horizon,
                                   sizeof(horizon)),
            kdelay_duration_format(c->fwd_lookahead_ms, look, sizeof(look)),
            kdelay_duration_format(c->fwd_claim_ahead_ms, ahead, sizeof(ahead)),
            c->fwd_max_held, (long long)c->fwd_max_held_bytes,
            f->eos ? "exactly_once" : "at_least_once", c->fwd_max_fire_rate);
}

static kdelay_err_t subscribe(kd_fwd_t *f)
{
        const kdelay_conf_t *c = f->conf;
        rd_kafka_topic_partition_list_t *l =
            rd_kafka_topic_partition_list_new((int)c->tiers.cnt);
        char topic[256];
        for (size_t i = 0; i < c->tiers.cnt; i++) {
                kd_tiers_topic(&c->tiers, i, c->topic_prefix, topic,
                               sizeof(topic));
                rd_kafka_topic_partition_list_add(l, topic,
                                                  RD_KAFKA_PARTITION_UA);
        }
        rd_kafka_resp_err_t err = rd_kafka_subscribe(f->consumer, l);
        rd_kafka_topic_partition_list_destroy(l);
        if (err) {
                kd_log(c, KDELAY_LOG_ERROR, "event=subscribe_failed err=\"%s\"",
                       rd_kafka_err2str(err));
                return KDELAY_ERR_KAFKA;
        }
        return KDELAY_OK;
}

/* Stop fetching, let in-flight work finish, commit what is complete,
 * leave the group (the revoke drops held tasks: they are not committed). */
static void shutdown_clean(kd_fwd_t *f)
{
        kd_log(f->conf, KDELAY_LOG_NOTICE,
               "event=forwarder_stopping held=%zu inflight=%zu", f->held_cnt,
               f->inflight);
        /* One deadline for the whole shutdown, revoke included. */
        f->shutdown_deadline = kd_mono_ms() + f->conf->fwd_shutdown_timeout_ms;
        rd_kafka_resp_err_t err = rd_kafka_consumer_close(f->consumer);
        if (err)
                kd_log(f->conf, KDELAY_LOG_WARNING,
                       "event=consumer_close_failed err=\"%s\"",
                       rd_kafka_err2str(err));
        /* Orphans from the revoke report here; mark what they delivered. */
        kd_produce_drain(f, f->shutdown_deadline);
        kd_claim_flush_fired(f, kd_now_ms());
        kd_fwd_log_stats(f, "forwarder_stopped");
}

kdelay_err_t kd_fwd_run(kd_fwd_t *f, volatile sig_atomic_t *stop, int wake_fd)
{
        f->stop = stop;
        f->wake_fd = wake_fd;
        f->consumer_q = rd_kafka_queue_get_consumer(f->consumer);
        f->producer_q = rd_kafka_queue_get_main(f->producer);
        if (!f->consumer_q || !f->producer_q ||
            io_wakeup(f->consumer_q, f->io_fds[0]) ||
            io_wakeup(f->producer_q, f->io_fds[1])) {
                kd_log(f->conf, KDELAY_LOG_ERROR,
                       "event=startup_failed what=io_wakeup err=\"%s\"",
                       strerror(errno));
                return KDELAY_ERR_SYSTEM;
        }
        log_start(f);
        if (f->eos) {
                char why[512];
                if (kd_txn_init(f, why, sizeof(why))) {
                        if (*stop && !f->fatal) {
                                /* Stopped while waiting for the broker:
                                 * nothing was consumed or produced. */
                                kd_log(f->conf, KDELAY_LOG_NOTICE,
                                       "event=forwarder_stopped "
                                       "before=init_transactions");
                                return KDELAY_OK;
                        }
                        kd_log(f->conf, KDELAY_LOG_ERROR,
                               "event=startup_failed what=init_transactions "
                               "err=\"%s\"",
                               why);
                        return KDELAY_ERR_KAFKA;
                }
        }
        if (subscribe(f))
                return KDELAY_ERR_KAFKA;
        struct pollfd fds[3] = {{f->io_fds[0][0], POLLIN, 0},
                                {f->io_fds[1][0], POLLIN, 0},
                                {wake_fd, POLLIN, 0}};
        int more = 1; /* the queues may hold events from before io setup */
        kdelay_err_t result = KDELAY_OK;
        while (!*stop) {
                char why[512] = "see the txn_error line";
                /* A fatal idempotent-producer error (e.g. fenced, or
                 * sequence loss) cannot be retried away: stop cleanly and
                 * exit non-zero so a supervisor starts a fresh process. */
                if (f->fatal ||
                    rd_kafka_fatal_error(f->producer, why, sizeof(why))) {
                        kd_log(f->conf, KDELAY_LOG_ERROR,
                               "event=producer_fatal err=\"%s\" "
                               "action=exit",
                               why);
                        result = KDELAY_ERR_KAFKA;
                        break;
                }
                tick(f, kd_now_ms());
                int timeout = more ? 0 : next_timeout(f, kd_now_ms());
                if (poll(fds, wake_fd >= 0 ? 3 : 2, timeout) < 0 &&
                    errno != EINTR)
                        break;
                drain_fd(fds[0].fd);
                drain_fd(fds[1].fd);
                more = serve_consumer(f);
                while (rd_kafka_poll(f->producer, 0) > 0)
                        ;
        }
        shutdown_clean(f);
        if (f->fatal) {
                kd_log(f->conf, KDELAY_LOG_ERROR,
                       "event=producer_fatal what=transaction action=exit");
                result = KDELAY_ERR_KAFKA;
        }
        return result;
}
