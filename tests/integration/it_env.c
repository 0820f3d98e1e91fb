/* SPDX-License-Identifier: Apache-2.0 */
/* Helpers for integration tests against the real local stack. */
#include "it_env.h"

#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <spawn.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/pidfd.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "kd_conf.h"
#include "kd_mysql.h"
#include "kd_schema.h"
#include "kd_schema_migrate.h"
#include "kd_secret.h"
#include "kd_topics.h"
#include "kd_util.h"

extern char **environ;

static const char *it_brokers_v;
static const char *it_mysql_url_v;

int it_env_init(void)
{
        it_brokers_v = getenv("KDELAY_BROKERS");
        it_mysql_url_v = getenv("KDELAY_MYSQL_URL");
        if (!it_brokers_v || !*it_brokers_v || !it_mysql_url_v ||
            !*it_mysql_url_v) {
                fprintf(stderr,
                        "integration tests need KDELAY_BROKERS and "
                        "KDELAY_MYSQL_URL (run scripts/test.sh, or eval "
                        "\"$(deploy/local/stack.sh env)\")\n");
                return -1;
        }
        return 0;
}

int it_kafka_nodes(void)
{
        const char *v = getenv("KDELAY_KAFKA_NODES");
        int n = v ? atoi(v) : 0;
        return n > 0 ? n : 1;
}

const char *it_brokers(void)
{
        return it_brokers_v;
}

const char *it_mysql_url(void)
{
        return it_mysql_url_v;
}

void it_unique(char *buf, size_t size, const char *stem)
{
        static int n;
        snprintf(buf, size, "%s%d_%d_%lld", stem, (int)getpid(), ++n,
                 (long long)(kd_now_ms() % 100000));
}

kdelay_err_t it_schedule_v(kdelay_client_t *c, const char *topic,
                           const char *stem, long i, int64_t fire_at_ms,
                           char *errstr, size_t errstr_size)
{
        char id[128];
        snprintf(id, sizeof(id), "%s-%ld", stem, i);
        kdelay_task_t t;
        kdelay_task_init(&t);
        t.topic = topic;
        t.id = id;
        t.value = "v";
        t.value_len = 1;
        t.fire_at_ms = fire_at_ms;
        return kdelay_schedule_async(c, &t, NULL, NULL, NULL, 0, errstr,
                                     errstr_size);
}

char **it_props_read(const char *path)
{
        FILE *fp = fopen(path, "r");
        if (!fp) {
                fprintf(stderr, "it_props_read: cannot read %s\n", path);
                return NULL;
        }
        char line[4096];
        size_t n = 0;
        char **props = calloc(1, sizeof(*props));
        while (props && fgets(line, sizeof(line), fp)) {
                line[strcspn(line, "\r\n")] = '\0';
                const char *l = line + strspn(line, " \t");
                if (!*l || *l == '#' || !strchr(l, '='))
                        continue;
                char **np = realloc(props, (n + 2) * sizeof(*np));
                if (!np) {
                        it_props_free(props);
                        props = NULL;
                        break;
                }
                props = np;
                props[n++] = strdup(l);
                props[n] = NULL;
        }
        fclose(fp);
        return props;
}

void it_props_free(char **props)
{
        for (size_t i = 0; props && props[i]; i++)
                free(props[i]);
        free(props);
}

const char *const *it_client_props(void)
{
        static char **props;
        static const char *const none[] = {NULL};
        const char *path = getenv("KDELAY_CLIENT_CONFIG");
        if (!props && path && *path)
                props = it_props_read(path);
        return props ? (const char *const *)props : none;
}

/* Sets "name=value" on rkc, resolving a file:/env: value. */
static int props_apply(rd_kafka_conf_t *rkc, const char *pair, char *errstr,
                       size_t errstr_size)
{
        char name[256], *value = NULL;
        const char *eq = strchr(pair, '=');
        if (!eq || (size_t)(eq - pair) >= sizeof(name)) {
                snprintf(errstr, errstr_size, "bad property \"%s\"", pair);
                return -1;
        }
        memcpy(name, pair, (size_t)(eq - pair));
        name[eq - pair] = '\0';
        if (kd_secret_resolve(name, eq + 1, &value, errstr, errstr_size))
                return -1;
        int rc = rd_kafka_conf_set(rkc, name, value, errstr, errstr_size) ==
                         RD_KAFKA_CONF_OK
                     ? 0
                     : -1;
        kd_secret_free(value);
        return rc;
}

kdelay_conf_t *it_conf_new(const char *prefix, const char *mysql_url)
{
        kdelay_conf_t *conf = kdelay_conf_new();
        if (!conf)
                return NULL;
        if (kdelay_conf_set(conf, "brokers", it_brokers(), NULL, 0) ||
            kdelay_conf_set(conf, "mysql.url",
                            mysql_url ? mysql_url : it_mysql_url(), NULL, 0) ||
            kdelay_conf_set(conf, "topics.partitions", "2", NULL, 0) ||
            (prefix &&
             kdelay_conf_set(conf, "topic_prefix", prefix, NULL, 0))) {
                kdelay_conf_destroy(conf);
                return NULL;
        }
        char errstr[512];
        for (const char *const *p = it_client_props(); *p; p++) {
                if (kdelay_conf_set_pair(conf, *p, errstr, sizeof(errstr))) {
                        fprintf(stderr, "it_conf_new: %s\n", errstr);
                        kdelay_conf_destroy(conf);
                        return NULL;
                }
        }
        return conf;
}

MYSQL *it_mysql_connect(void)
{
        kdelay_conf_t *conf = it_conf_new(NULL, NULL);
        MYSQL *conn = NULL;
        char errstr[256];
        if (conf && kd_mysql_connect(conf, &conn, errstr, sizeof(errstr)))
                fprintf(stderr, "it_mysql_connect: %s\n", errstr);
        kdelay_conf_destroy(conf);
        return conn;
}

int it_mysql_value(MYSQL *conn, const char *sql, int col, char *out,
                   size_t size)
{
        MYSQL_RES *res = NULL;
        int rc = -1;
        if (size)
                out[0] = '\0';
        if (!mysql_query(conn, sql) && (res = mysql_store_result(conn))) {
                MYSQL_ROW row = mysql_fetch_row(res);
                if (row && col >= 0 && (unsigned)col < mysql_num_fields(res) &&
                    row[col]) {
                        snprintf(out, size, "%s", row[col]);
                        rc = 0;
                }
        }
        mysql_free_result(res);
        return rc;
}

long long it_mysql_ll(MYSQL *conn, const char *sql, int col)
{
        char v[32];
        return it_mysql_value(conn, sql, col, v, sizeof(v)) ? -1 : atoll(v);
}

int it_mysql_url_as(const char *user, const char *password, const char *db,
                    char *out, size_t size)
{
        kd_mysql_params_t p;
        char errstr[256];
        const char *url = it_mysql_url();
        if (kd_mysql_url_parse(url, &p, errstr, sizeof(errstr))) {
                fprintf(stderr, "it_mysql_url_as: %s\n", errstr);
                return -1;
        }
        const char *at = strrchr(url, '@');
        const char *query = strchr(at ? at : url, '?');
        int n = snprintf(out, size, "mysql://%s%s%s@%s:%u/%s%s",
                         user ? user : p.user,
                         password || (!user && p.password) ? ":" : "",
                         password                ? password
                         : (!user && p.password) ? p.password
                                                 : "",
                         p.host, p.port, db ? db : p.db, query ? query : "");
        kd_mysql_params_clear(&p);
        return n < 0 || (size_t)n >= size ? -1 : 0;
}

int it_db_create(const char *name, int migrate, char *url_out, size_t url_size)
{
        char sql[256], errstr[256];
        if (it_mysql_url_as(NULL, NULL, name, url_out, url_size))
                return -1;
        MYSQL *conn = it_mysql_connect();
        if (!conn)
                return -1;
        snprintf(sql, sizeof(sql), "CREATE DATABASE `%s`", name);
        int rc = mysql_query(conn, sql) ? -1 : 0;
        if (rc)
                fprintf(stderr, "it_db_create: %s\n", mysql_error(conn));
        if (!rc && migrate) {
                snprintf(sql, sizeof(sql), "USE `%s`", name);
                if (mysql_query(conn, sql) ||
                    kd_schema_migrate(conn, NULL, NULL, NULL, NULL, errstr,
                                      sizeof(errstr))) {
                        fprintf(stderr, "it_db_create: migrate: %s\n", errstr);
                        rc = -1;
                }
        }
        mysql_close(conn);
        return rc;
}

void it_db_drop(const char *name)
{
        char sql[256];
        MYSQL *conn = it_mysql_connect();
        if (!conn)
                return;
        snprintf(sql, sizeof(sql), "DROP DATABASE IF EXISTS `%s`", name);
        if (mysql_query(conn, sql))
                fprintf(stderr, "it_db_drop: %s\n", mysql_error(conn));
        mysql_close(conn);
}

rd_kafka_t *it_kafka_new(rd_kafka_type_t type, const char *const *props)
{
        char errstr[512];
        rd_kafka_conf_t *rkc = rd_kafka_conf_new();
        if (rd_kafka_conf_set(rkc, "bootstrap.servers", it_brokers(), errstr,
                              sizeof(errstr)))
                goto fail;
        for (const char *const *p = it_client_props(); *p; p++)
                if (props_apply(rkc, *p, errstr, sizeof(errstr)))
                        goto fail;
        for (size_t i = 0; props && props[i]; i += 2)
                if (rd_kafka_conf_set(rkc, props[i], props[i + 1], errstr,
                                      sizeof(errstr)))
                        goto fail;
        rd_kafka_t *rk = rd_kafka_new(type, rkc, errstr, sizeof(errstr));
        if (rk)
                return rk;
fail:
        rd_kafka_conf_destroy(rkc);
        fprintf(stderr, "it_kafka_new: %s\n", errstr);
        return NULL;
}

int it_wait_topic(const char *topic)
{
        rd_kafka_t *rk = it_kafka_new(RD_KAFKA_PRODUCER, NULL);
        if (!rk)
                return -1;
        int found = 0;
        int64_t deadline = kd_mono_ms() + 30000;
        while (!found && kd_mono_ms() < deadline) {
                const struct rd_kafka_metadata *md;
                if (rd_kafka_metadata(rk, 1, NULL, &md, 5000) == 0) {
                        for (int t = 0; t < md->topic_cnt; t++)
                                if (!strcmp(md->topics[t].topic, topic) &&
                                    !md->topics[t].err)
                                        found = 1;
                        rd_kafka_metadata_destroy(md);
                }
                if (!found)
                        rd_kafka_poll(rk, 100);
        }
        rd_kafka_destroy(rk);
        return found ? 0 : -1;
}

void it_msg_free(it_msg_t *m)
{
        free(m->key);
        free(m->value);
        if (m->headers)
                rd_kafka_headers_destroy(m->headers);
        memset(m, 0, sizeof(*m));
}

/* Reads records of topics from the start. With fixed (msgs, want) it stops
 * at want; with grow (msgsp) it stops after idle_ms without a record. */
static size_t consume(const char *const *topics, it_msg_t *msgs, size_t want,
                      it_msg_t **msgsp, int idle_ms, int timeout_ms)
{
        static const char *const props[] = {"group.id", "kdelay-it-reader",
                                            "enable.auto.commit", "false",
                                            NULL};
        rd_kafka_t *rk = it_kafka_new(RD_KAFKA_CONSUMER, props);
        if (!rk)
                return 0;
        rd_kafka_poll_set_consumer(rk);
        /* Assign every partition from the beginning: no group, no wait for
         * a rebalance. */
        rd_kafka_topic_partition_list_t *parts =
            rd_kafka_topic_partition_list_new(8);
        for (size_t t = 0; topics[t]; t++) {
                const struct rd_kafka_metadata *md;
                rd_kafka_topic_t *rkt = rd_kafka_topic_new(rk, topics[t], NULL);
                if (rd_kafka_metadata(rk, 0, rkt, &md, 10000) == 0) {
                        for (int p = 0; p < md->topics[0].partition_cnt; p++)
                                rd_kafka_topic_partition_list_add(
                                    parts, topics[t],
                                    md->topics[0].partitions[p].id)
                                    ->offset = RD_KAFKA_OFFSET_BEGINNING;
                        rd_kafka_metadata_destroy(md);
                }
                rd_kafka_topic_destroy(rkt);
        }
        rd_kafka_assign(rk, parts);
        rd_kafka_topic_partition_list_destroy(parts);
        size_t n = 0, cap = 0;
        int64_t deadline = kd_mono_ms() + timeout_ms;
        int64_t last = kd_mono_ms();
        while (kd_mono_ms() < deadline) {
                if (msgs && n >= want)
                        break;
                if (msgsp && kd_mono_ms() - last >= idle_ms)
                        break;
                rd_kafka_message_t *m = rd_kafka_consumer_poll(rk, 100);
                if (!m)
                        continue;
                if (m->err) {
                        rd_kafka_message_destroy(m);
                        continue;
                }
                last = kd_mono_ms();
                if (msgsp && n == cap) {
                        size_t ncap = cap ? cap * 2 : 1024;
                        it_msg_t *nv = realloc(*msgsp, ncap * sizeof(*nv));
                        if (!nv) {
                                /* What was read so far; the caller's
                                 * counts then fail the test. */
                                fprintf(stderr, "consume: out of memory\n");
                                rd_kafka_message_destroy(m);
                                break;
                        }
                        *msgsp = nv;
                        cap = ncap;
                }
                it_msg_t *o = msgsp ? &(*msgsp)[n++] : &msgs[n++];
                memset(o, 0, sizeof(*o));
                snprintf(o->topic, sizeof(o->topic), "%s",
                         rd_kafka_topic_name(m->rkt));
                o->partition = m->partition;
                o->offset = m->offset;
                o->key = kd_memdup(m->key, m->key_len);
                o->key_len = m->key_len;
                o->value = kd_memdup(m->payload, m->len);
                o->len = m->len;
                o->ts = rd_kafka_message_timestamp(m, &o->tstype);
                o->recv_ms = kd_now_ms();
                rd_kafka_headers_t *h = NULL;
                if (!rd_kafka_message_headers(m, &h) && h)
                        o->headers = rd_kafka_headers_copy(h);
                rd_kafka_message_destroy(m);
        }
        rd_kafka_consumer_close(rk);
        rd_kafka_destroy(rk);
        return n;
}

size_t it_consume(const char *const *topics, it_msg_t *msgs, size_t want,
                  int timeout_ms)
{
        return consume(topics, msgs, want, NULL, 0, timeout_ms);
}

size_t it_wait_records(const char *const *topics, size_t want, int timeout_ms)
{
        it_msg_t *msgs = calloc(want ? want : 1, sizeof(*msgs));
        if (!msgs)
                return 0;
        size_t n = consume(topics, msgs, want, NULL, 0, timeout_ms);
        for (size_t k = 0; k < n; k++)
                it_msg_free(&msgs[k]);
        free(msgs);
        return n;
}

size_t it_consume_all(const char *const *topics, it_msg_t **msgsp, int idle_ms,
                      int timeout_ms)
{
        *msgsp = NULL;
        return consume(topics, NULL, 0, msgsp, idle_ms, timeout_ms);
}

static int create_topic(const char *topic, int partitions, int rf,
                        const char *const *configs);

int it_create_topic(const char *topic, int partitions)
{
        return it_create_topic_rf(topic, partitions, 1);
}

int it_create_topic_rf(const char *topic, int partitions, int rf)
{
        return create_topic(topic, partitions, rf, NULL);
}

int it_create_topic_conf(const char *topic, int partitions,
                         const char *const *configs)
{
        return create_topic(topic, partitions, 1, configs);
}

static int create_topic(const char *topic, int partitions, int rf,
                        const char *const *configs)
{
        char errstr[256];
        rd_kafka_t *rk = it_kafka_new(RD_KAFKA_PRODUCER, NULL);
        if (!rk)
                return -1;
        rd_kafka_NewTopic_t *nt = rd_kafka_NewTopic_new(topic, partitions, rf,
                                                        errstr, sizeof(errstr));
        if (!nt) {
                printf("\n  topic %s: %s", topic, errstr);
                rd_kafka_destroy(rk);
                return -1;
        }
        for (int i = 0; configs && configs[i]; i += 2)
                if (rd_kafka_NewTopic_set_config(nt, configs[i],
                                                 configs[i + 1])) {
                        printf("\n  topic %s: cannot set %s", topic,
                               configs[i]);
                        rd_kafka_NewTopic_destroy(nt);
                        rd_kafka_destroy(rk);
                        return -1;
                }
        rd_kafka_queue_t *q = rd_kafka_queue_new(rk);
        rd_kafka_CreateTopics(rk, &nt, 1, NULL, q);
        rd_kafka_event_t *ev = rd_kafka_queue_poll(q, 30000);
        int rc = -1;
        if (ev) {
                size_t n;
                const rd_kafka_topic_result_t **res =
                    rd_kafka_CreateTopics_result_topics(
                        rd_kafka_event_CreateTopics_result(ev), &n);
                if (n == 1 && !rd_kafka_topic_result_error(res[0]))
                        rc = 0;
                else if (n == 1)
                        printf("\n  topic %s: %s", topic,
                               rd_kafka_topic_result_error_string(res[0]));
                rd_kafka_event_destroy(ev);
        }
        rd_kafka_queue_destroy(q);
        rd_kafka_NewTopic_destroy(nt);
        rd_kafka_destroy(rk);
        return rc ? rc : it_wait_topic(topic);
}

int it_create_topic_config(const char *topic, int partitions, const char *name,
                           const char *value)
{
        const char *const configs[] = {name, value, NULL};
        return create_topic(topic, partitions, 1, configs);
}

int it_stack(const char *verb)
{
        /* "node-stop 1 --kill": a verb and its arguments. */
        char words[128];
        kd_strlcpy(words, verb, sizeof(words));
        char *argv[6] = {KDELAY_SOURCE_DIR "/deploy/local/stack.sh", words};
        for (int n = 2; n < 5 && (argv[n] = strchr(argv[n - 1], ' ')); n++)
                *argv[n]++ = '\0';
        char *out = NULL, *err = NULL;
        int rc = it_run(argv, NULL, &out, &err);
        if (rc)
                printf("\n  stack.sh %s: exit %d: %s%s", verb, rc,
                       out ? out : "", err ? err : "");
        free(out);
        free(err);
        return rc;
}

int it_delete_topic(const char *topic)
{
        rd_kafka_t *rk = it_kafka_new(RD_KAFKA_PRODUCER, NULL);
        if (!rk)
                return -1;
        rd_kafka_DeleteTopic_t *dt = rd_kafka_DeleteTopic_new(topic);
        rd_kafka_queue_t *q = rd_kafka_queue_new(rk);
        rd_kafka_DeleteTopics(rk, &dt, 1, NULL, q);
        rd_kafka_event_t *ev = rd_kafka_queue_poll(q, 30000);
        int rc = -1;
        if (ev) {
                size_t n;
                const rd_kafka_topic_result_t **res =
                    rd_kafka_DeleteTopics_result_topics(
                        rd_kafka_event_DeleteTopics_result(ev), &n);
                rd_kafka_resp_err_t err =
                    n == 1 ? rd_kafka_topic_result_error(res[0])
                           : RD_KAFKA_RESP_ERR__FAIL;
                if (!err || err == RD_KAFKA_RESP_ERR_UNKNOWN_TOPIC_OR_PART)
                        rc = 0; /* deleted (an earlier try may have) */
                rd_kafka_event_destroy(ev);
        }
        rd_kafka_queue_destroy(q);
        rd_kafka_DeleteTopic_destroy(dt);
        /* Gone from the metadata (the broker deletes asynchronously). */
        int64_t deadline = kd_mono_ms() + 30000;
        int gone = 0;
        while (!rc && !gone && kd_mono_ms() < deadline) {
                const struct rd_kafka_metadata *md;
                gone = 1;
                if (rd_kafka_metadata(rk, 1, NULL, &md, 5000) == 0) {
                        for (int t = 0; t < md->topic_cnt; t++)
                                if (!strcmp(md->topics[t].topic, topic) &&
                                    !md->topics[t].err)
                                        gone = 0;
                        rd_kafka_metadata_destroy(md);
                } else {
                        gone = 0;
                }
                if (!gone)
                        rd_kafka_poll(rk, 100);
        }
        rd_kafka_destroy(rk);
        return rc || !gone ? -1 : 0;
}

pid_t it_spawn(char *const argv[], const char *log_path)
{
        posix_spawn_file_actions_t fa;
        posix_spawn_file_actions_init(&fa);
        posix_spawn_file_actions_addopen(&fa, 0, "/dev/null", O_RDONLY, 0);
        posix_spawn_file_actions_addopen(&fa, 1, log_path,
                                         O_WRONLY | O_CREAT | O_APPEND, 0644);
        posix_spawn_file_actions_adddup2(&fa, 1, 2);
        pid_t pid;
        int rc = posix_spawn(&pid, argv[0], &fa, NULL, argv, environ);
        posix_spawn_file_actions_destroy(&fa);
        return rc ? -1 : pid;
}

int it_wait_pid(pid_t pid, int timeout_ms)
{
        /* A pidfd becomes readable when the process exits. */
        int fd = pidfd_open(pid, 0);
        if (fd >= 0) {
                struct pollfd p = {fd, POLLIN, 0};
                int r = poll(&p, 1, timeout_ms);
                close(fd);
                if (r == 0)
                        return -1;
        }
        int status;
        if (waitpid(pid, &status, fd >= 0 ? 0 : WNOHANG) != pid)
                return -1;
        return WIFEXITED(status) ? WEXITSTATUS(status) : 128 + WTERMSIG(status);
}

char *it_header(const it_msg_t *m, const char *name)
{
        const void *v;
        size_t len;
        if (!m->headers || rd_kafka_header_get_last(m->headers, name, &v, &len))
                return NULL;
        char *s = malloc(len + 1);
        if (!s)
                return NULL;
        memcpy(s, v ? v : "", len);
        s[len] = '\0';
        return s;
}

/* Reads fd until EOF into a new string. */
static void drain(int fds[2], char **bufs)
{
        size_t len[2] = {0, 0}, cap[2] = {0, 0};
        int open_cnt = 2;
        struct pollfd pfd[2] = {{fds[0], POLLIN, 0}, {fds[1], POLLIN, 0}};
        for (int i = 0; i < 2; i++) {
                cap[i] = 4096;
                bufs[i] = malloc(cap[i]);
                bufs[i][0] = '\0';
        }
        while (open_cnt > 0) {
                if (poll(pfd, 2, -1) < 0)
                        break;
                for (int i = 0; i < 2; i++) {
                        if (pfd[i].fd < 0 || !pfd[i].revents)
                                continue;
                        if (len[i] + 1024 >= cap[i]) {
                                cap[i] *= 2;
                                bufs[i] = realloc(bufs[i], cap[i]);
                        }
                        ssize_t r = read(pfd[i].fd, bufs[i] + len[i],
                                         cap[i] - len[i] - 1);
                        if (r <= 0) {
                                close(pfd[i].fd);
                                pfd[i].fd = -1;
                                open_cnt--;
                                continue;
                        }
                        len[i] += (size_t)r;
                        bufs[i][len[i]] = '\0';
                }
        }
}

int it_run(char *const argv[], char *const env[], char **out, char **err)
{
        int po[2], pe[2];
        /* CLOEXEC: only the dup2'd copies reach the child, so a daemon it
         * starts cannot hold our pipes open. */
        if (pipe2(po, O_CLOEXEC) || pipe2(pe, O_CLOEXEC))
                return -1;
        posix_spawn_file_actions_t fa;
        posix_spawn_file_actions_init(&fa);
        posix_spawn_file_actions_adddup2(&fa, po[1], 1);
        posix_spawn_file_actions_adddup2(&fa, pe[1], 2);
        posix_spawn_file_actions_addclose(&fa, po[0]);
        posix_spawn_file_actions_addclose(&fa, pe[0]);
        posix_spawn_file_actions_addopen(&fa, 0, "/dev/null", O_RDONLY, 0);

        size_t n0 = 0, n1 = 0;
        while (environ[n0])
                n0++;
        while (env && env[n1])
                n1++;
        char **envp = calloc(n0 + n1 + 1, sizeof(*envp));
        /* env first: getenv() takes the first match. */
        if (n1)
                memcpy(envp, env, n1 * sizeof(*envp));
        memcpy(envp + n1, environ, n0 * sizeof(*envp));
        pid_t pid;
        int rc = posix_spawn(&pid, argv[0], &fa, NULL, argv, envp);
        posix_spawn_file_actions_destroy(&fa);
        free(envp);
        close(po[1]);
        close(pe[1]);
        if (rc) {
                close(po[0]);
                close(pe[0]);
                return -1;
        }
        char *bufs[2];
        int fds[2] = {po[0], pe[0]};
        drain(fds, bufs);
        int status;
        waitpid(pid, &status, 0);
        if (out)
                *out = bufs[0];
        else
                free(bufs[0]);
        if (err)
                *err = bufs[1];
        else
                free(bufs[1]);
        return WIFEXITED(status) ? WEXITSTATUS(status) : 128 + WTERMSIG(status);
}

int it_log_count(const char *path, const char *needle)
{
        FILE *fp = fopen(path, "r");
        char line[8192];
        int n = 0;
        if (!fp)
                return 0;
        while (fgets(line, sizeof(line), fp))
                if (strstr(line, needle))
                        n++;
        fclose(fp);
        return n;
}

int64_t it_log_sum(const char *path, const char *needle, const char *field)
{
        FILE *fp = fopen(path, "r");
        char line[8192], key[128];
        int64_t sum = 0;
        if (!fp)
                return -1;
        snprintf(key, sizeof(key), " %s=", field);
        while (fgets(line, sizeof(line), fp)) {
                const char *v;
                if (!strstr(line, needle) || !(v = strstr(line, key)))
                        continue;
                sum += strtoll(v + strlen(key), NULL, 10);
        }
        fclose(fp);
        return sum;
}

int it_wait_log(const char *path, const char *needle, int timeout_ms)
{
        int64_t deadline = kd_mono_ms() + timeout_ms;
        while (kd_mono_ms() < deadline) {
                if (it_log_count(path, needle) > 0)
                        return 0;
                struct timespec ts = {0, 50 * 1000 * 1000};
                nanosleep(&ts, NULL);
        }
        return -1;
}

void it_sleep_until(int64_t at_ms)
{
        int64_t d = at_ms - kd_now_ms();
        if (d > 0) {
                struct timespec ts = {d / 1000, (d % 1000) * 1000000};
                nanosleep(&ts, NULL);
        }
}

int it_tiers_create(const char *prefix, const char *mysql_url, int partitions)
{
        return it_tiers_create_rf(prefix, mysql_url, partitions, 1);
}

int it_tiers_create_rf(const char *prefix, const char *mysql_url,
                       int partitions, int rf)
{
        char errstr[512];
        kd_topic_report_t reports[KD_TOPICS_MAX];
        size_t n;
        kdelay_conf_t *conf = it_conf_new(prefix, mysql_url);
        int rc = conf ? (int)kd_topics_create(conf, partitions, rf, reports, &n,
                                              errstr, sizeof(errstr))
                      : -1;
        kdelay_conf_destroy(conf);
        if (rc)
                fprintf(stderr, "topics of %s: %s\n", prefix,
                        conf ? errstr : "no conf");
        return rc ? -1 : 0;
}

int it_fwd_start(it_fwd_t *f, const char *bin, const char *pfx, const char *grp,
                 const char *mysql_url, const char *const *props)
{
        char xp[256], xg[256], xi[128];
        char *argv[1 + 8 + 11 + 2 * 20 + 1];
        int n = 0;
        snprintf(xp, sizeof(xp), "topic_prefix=%s", pfx);
        snprintf(xg, sizeof(xg), "forwarder.group_id=%s", grp);
        snprintf(xi, sizeof(xi), "forwarder.instance=%s", f->instance);
        snprintf(f->log, sizeof(f->log), "fwd-%s-%s.log", pfx, f->instance);
        if (f->env) {
                argv[n++] = "/usr/bin/env";
                for (int i = 0; f->env[i]; i++) {
                        if (i >= 8)
                                return -1;
                        argv[n++] = (char *)f->env[i];
                }
        }
        argv[n++] = (char *)bin;
        argv[n++] = "--brokers";
        argv[n++] = (char *)it_brokers();
        argv[n++] = "--mysql";
        argv[n++] = (char *)mysql_url;
        argv[n++] = "-X";
        argv[n++] = xp;
        argv[n++] = "-X";
        argv[n++] = xg;
        argv[n++] = "-X";
        argv[n++] = xi;
        for (int i = 0; props && props[i]; i++) {
                if (i >= 20)
                        return -1;
                argv[n++] = "-X";
                argv[n++] = (char *)props[i];
        }
        argv[n] = NULL;
        f->pid = it_spawn(argv, f->log);
        return f->pid > 0 ? 0 : -1;
}

int it_fwd_stop(it_fwd_t *f, int sig)
{
        kill(f->pid, sig);
        int rc = it_wait_pid(f->pid, 60000);
        f->pid = -1;
        return rc;
}

int it_ctl_withv(const it_ctl_opts_t *o, char **outp, char **errp, va_list ap)
{
        char *argv[80], pfx[128];
        int n = 0;
        free(*outp);
        free(*errp);
        *outp = *errp = NULL;
        argv[n++] = (char *)o->bin;
        for (const char *a; n < 56 && (a = va_arg(ap, const char *));)
                argv[n++] = (char *)a;
        argv[n++] = "--brokers";
        argv[n++] = (char *)it_brokers();
        if (o->url) {
                argv[n++] = "--mysql";
                argv[n++] = (char *)o->url;
        }
        if (o->prefix) {
                snprintf(pfx, sizeof(pfx), "topic_prefix=%s", o->prefix);
                argv[n++] = "-X";
                argv[n++] = pfx;
        }
        /* The stack's Kafka identity by its file, whose password must not
         * go on a command line. */
        const char *cfg = getenv("KDELAY_CLIENT_CONFIG");
        if (!o->props && cfg && *cfg) {
                argv[n++] = "--kafka-config";
                argv[n++] = (char *)cfg;
        }
        for (const char *const *p = o->props; p && *p && n < 77; p++) {
                argv[n++] = "-X";
                argv[n++] = (char *)*p;
        }
        argv[n] = NULL;
        int rc = it_run(argv, o->env, outp, errp);
        if (getenv("IT_VERBOSE"))
                fprintf(stderr, "kdelayctl %s -> %d: %s%s\n", argv[1], rc,
                        *outp ? *outp : "", *errp ? *errp : "");
        return rc;
}

int it_ctl_with(const it_ctl_opts_t *o, char **outp, char **errp, ...)
{
        va_list ap;
        va_start(ap, errp);
        int rc = it_ctl_withv(o, outp, errp, ap);
        va_end(ap);
        return rc;
}

int it_ctl(const char *bin, const char *prefix, const char *url, char **outp,
           char **errp, ...)
{
        it_ctl_opts_t o = {.bin = bin, .prefix = prefix, .url = url};
        va_list ap;
        va_start(ap, errp);
        int rc = it_ctl_withv(&o, outp, errp, ap);
        va_end(ap);
        return rc;
}

static int cmp_i64(const void *a, const void *b)
{
        int64_t x = *(const int64_t *)a, y = *(const int64_t *)b;
        return x < y ? -1 : x > y;
}

void it_report_lateness(const char *what, int64_t *v, size_t n, int64_t *p99,
                        int64_t *max)
{
        *p99 = *max = 0;
        if (n == 0)
                return;
        qsort(v, n, sizeof(*v), cmp_i64);
        *p99 = v[(n * 99) / 100];
        *max = v[n - 1];
        printf("\n  lateness %-22s n=%-5zu p50=%lldms p99=%lldms max=%lldms",
               what, n, (long long)v[n / 2], (long long)*p99, (long long)*max);
}
