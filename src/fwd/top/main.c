/* SPDX-License-Identifier: Apache-2.0 */
/* kdelay-forwarder: holds each tier partition until its head is due, then
 * hops or fires its tasks (docs/forwarder.md). Logs go to stderr. */
#include <fcntl.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "buildinfo.h"
#include "cli.h"
#include "kd_fwd.h"
#include "kd_log.h"
#include "kd_util.h"

#ifdef KD_JEMALLOC
/* jemalloc's options, read at its start (docs/development.md): a
 * background thread returns freed pages to the system, as redis has it,
 * instead of the thread that freed them (madvise and page faults were a
 * tenth of the main loop's CPU in a catch-up). MALLOC_CONF in the
 * environment adds to or overrides them. */
const char *malloc_conf = "background_thread:true";
#endif

static const char kd_fwd_help[] =
    "Usage: kdelay-forwarder [OPTIONS]\n"
    "\n"
    "Consumes the tier topics as consumer group forwarder.group_id, holds\n"
    "each task until it is due, claims it in the MySQL fate table and\n"
    "fires it to its target topic, or hops it to a smaller tier. Run\n"
    "several for more partitions; they share the work through the group.\n"
    "With -X forwarder.delivery=exactly_once (and a stable\n"
    "forwarder.instance) hops and fires go through Kafka transactions.\n"
    "SIGTERM/SIGINT: finish in-flight work, commit, leave the group, exit\n"
    "0; a second signal exits at once (130). SIGHUP is ignored (logs go\n"
    "to stderr). Exit 1: startup failed, or a fatal Kafka error that a\n"
    "new producer cannot get past (denied; a second one within 30 s,\n"
    "e.g. fenced again by another process with the same transactional\n"
    "id): restart it.\n"
    "Exit 2: a configuration error; exit 6: forwarder.http_listen cannot\n"
    "be listened on (its port taken: give each forwarder its own). A\n"
    "restart does not help either: fix the setting first.\n"
    "With -X forwarder.http_listen=127.0.0.1:9464: /metrics (Prometheus),\n"
    "/healthz, /readyz. Settings: docs/configuration.md (forwarder.*).\n"
    "\n";

_Static_assert(KD_EXIT_HTTP_LISTEN == KD_FWD_EXIT_HTTP_LISTEN,
               "one exit status for an http_listen failure");

static volatile sig_atomic_t kd_stop;
static int kd_wake_pipe[2] = {-1, -1};

static void on_signal(int sig)
{
        (void)sig;
        if (kd_stop)
                _exit(130); /* second signal: at once */
        kd_stop = 1;
        if (kd_wake_pipe[1] >= 0) {
                char c = 's';
                ssize_t r = write(kd_wake_pipe[1], &c, 1);
                (void)r;
        }
}

int main(int argc, char **argv)
{
        kd_cli_t cli;
        int argi;
        char errstr[512] = "";
        /* Signals first: a supervisor's SIGTERM right after the start
         * must still mean a clean stop. */
        if (pipe2(kd_wake_pipe, O_NONBLOCK | O_CLOEXEC)) {
                perror("kdelay-forwarder: pipe");
                return KD_EXIT_ERROR;
        }
        struct sigaction sa;
        memset(&sa, 0, sizeof(sa));
        sa.sa_handler = on_signal;
        sigemptyset(&sa.sa_mask);
        sigaction(SIGTERM, &sa, NULL);
        sigaction(SIGINT, &sa, NULL);
        signal(SIGPIPE, SIG_IGN);
        /* Logs go to stderr: nothing to re-open. A hang-up from a
         * terminal or a supervisor's reload must not stop the forwarder. */
        signal(SIGHUP, SIG_IGN);

        if (argc > 1 && !strcmp(argv[1], "--version")) {
                kd_build_print(stdout, "kdelay-forwarder");
                return KD_EXIT_OK;
        }
        kd_cli_init(&cli, "kdelay-forwarder");
        cli.info = 1;
        int rc = kd_cli_parse(&cli, argc, argv, "", NULL, NULL, NULL,
                              kd_fwd_help, &argi);
        if (rc == KD_EXIT_OK && argi < argc)
                rc = kd_cli_usage_error(&cli, "unexpected argument \"%s\"",
                                        argv[argi]);
        if (rc != KD_EXIT_OK) {
                kd_cli_clear(&cli);
                close(kd_wake_pipe[0]);
                close(kd_wake_pipe[1]);
                return rc == KD_CLI_HELP_SHOWN ? KD_EXIT_OK : rc;
        }
        /* A test aid (docs/development.md): this forwarder's wall clock
         * runs that far ahead, as on a host whose clock is off. */
        const char *offset = getenv("KDELAY_TEST_CLOCK_OFFSET_MS");
        if (offset && *offset) {
                char *end;
                long long ms = strtoll(offset, &end, 10);
                if (*end) {
                        rc = kd_cli_usage_error(
                            &cli,
                            "KDELAY_TEST_CLOCK_OFFSET_MS: want milliseconds, "
                            "got \"%s\"",
                            offset);
                        kd_cli_clear(&cli);
                        close(kd_wake_pipe[0]);
                        close(kd_wake_pipe[1]);
                        return rc;
                }
                kd_clock_offset_set(ms);
                kd_cli_log(&cli, KDELAY_LOG_WARNING,
                           "event=test_clock_offset ms=%lld", ms);
        }
        kd_fwd_t *f = NULL;
        kdelay_err_t err =
            kd_fwd_new(&f, cli.conf, NULL, NULL, errstr, sizeof(errstr));
        if (err) {
                char q[600];
                kd_cli_log(&cli, KDELAY_LOG_ERROR,
                           "event=startup_failed err=%s code=%s",
                           kd_log_quote(errstr, q, sizeof(q)),
                           kdelay_err_name(err));
                kd_cli_clear(&cli);
                return KD_EXIT_ERROR;
        }
        cli.conf = NULL; /* the forwarder owns it */
        err = kd_fwd_run(f, &kd_stop, kd_wake_pipe[0]);
        int http_failed = err && kd_fwd_http_failed(f);
        kd_fwd_destroy(f);
        kd_cli_log(&cli, KDELAY_LOG_NOTICE, "event=forwarder_exit err=%s",
                   kdelay_err_name(err));
        kd_cli_clear(&cli);
        close(kd_wake_pipe[0]);
        close(kd_wake_pipe[1]);
        return http_failed ? KD_EXIT_HTTP_LISTEN
               : err       ? KD_EXIT_ERROR
                           : KD_EXIT_OK;
}
