/* SPDX-License-Identifier: Apache-2.0 */
/* What every kdelay binary shares: the common options (-c, --brokers,
 * --mysql, -X, -v), building the conf from them, logging to stderr as
 * key=value lines, and exit codes. */
#ifndef KD_CLI_H
#define KD_CLI_H

#include <getopt.h>

#include <kdelay/kdelay.h>

/* The installed config file, read when neither -c nor $KDELAY_CONFIG names
 * one. Its one definition is CMakeLists.txt's compile definition on kd_cli
 * (<sysconfdir>/kdelay/kdelay.conf), passed on to every binary linking it. */
#ifndef KD_DEFAULT_CONFIG
#error "KD_DEFAULT_CONFIG comes from the build: link the kd_cli target"
#endif

/* Exit codes of every kdelay binary. */
enum {
        KD_EXIT_OK = 0,
        KD_EXIT_ERROR = 1,     /* runtime failure */
        KD_EXIT_USAGE = 2,     /* bad command line */
        KD_EXIT_TOO_LATE = 3,  /* cancel lost: task already firing/fired */
        KD_EXIT_NOT_FOUND = 4, /* no pending task has that id */
        KD_EXIT_DEAD = 5,      /* cancel: the task was dead-lettered */
        /* kdelay-forwarder: forwarder.http_listen cannot be listened on
         * (its port taken, most often by another forwarder on the host):
         * a restart does not help (the systemd unit's
         * RestartPreventExitStatus=). */
        KD_EXIT_HTTP_LISTEN = 6
};

/* Long options of the common set, to append to a verb's own options;
 * KD_CLI_SHORTOPTS goes into its getopt short-option string. */
#define KD_CLI_SHORTOPTS        "b:c:X:vqh"
#define KD_CLI_OPT_MYSQL        0x101
#define KD_CLI_OPT_KAFKA_CONFIG 0x102
#define KD_CLI_OPT_NO_HEADERS   0x103
#define KD_CLI_LONGOPTS                                                        \
        {"config", required_argument, NULL, 'c'},                              \
            {"brokers", required_argument, NULL, 'b'},                         \
            {"mysql", required_argument, NULL, KD_CLI_OPT_MYSQL},              \
            {"kafka-config", required_argument, NULL,                          \
             KD_CLI_OPT_KAFKA_CONFIG},                                         \
            {"command-config", required_argument, NULL,                        \
             KD_CLI_OPT_KAFKA_CONFIG},                                         \
            {"verbose", no_argument, NULL, 'v'},                               \
            {"quiet", no_argument, NULL, 'q'},                                 \
            {"no-headers", no_argument, NULL, KD_CLI_OPT_NO_HEADERS},          \
        {                                                                      \
                "help", no_argument, NULL, 'h'                                 \
        }
/* Help text for the common options, for every --help. */
#define KD_CLI_HELP                                                            \
        "Common options (kdelayctl takes them before or after the verb):\n"    \
        "  -c, --config FILE    libconfig file (default: $KDELAY_CONFIG, "     \
        "else\n"                                                               \
        "                       " KD_DEFAULT_CONFIG " when it exists)\n"       \
        "  -b, --brokers LIST   Kafka bootstrap servers HOST:PORT[,...] "      \
        "(default:\n"                                                          \
        "                       $KDELAY_BROKERS)\n"                            \
        "      --mysql URL      mysql://user[:password]@host[:port]/db "       \
        "(default:\n"                                                          \
        "                       $KDELAY_MYSQL_URL); the password may come "    \
        "from\n"                                                               \
        "                       $KDELAY_MYSQL_PASSWORD\n"                      \
        "      --kafka-config FILE, --command-config FILE\n"                   \
        "                       Kafka client properties file (name=value "     \
        "lines,\n"                                                             \
        "                       as Kafka's tools take) for every Kafka "       \
        "client;\n"                                                            \
        "                       -X wins over it (default: "                    \
        "$KDELAY_KAFKA_CONFIG);\n"                                             \
        "                       a password in it by value needs mode 0600 "    \
        "or 0400\n"                                                            \
        "  -X NAME=VALUE        kdelay property, else librdkafka property\n"   \
        "  -v, --verbose        log debug lines to stderr\n"                   \
        "  -q, --quiet          no informational lines on stderr (progress,\n" \
        "                       notes); warnings and errors still\n"           \
        "      --no-headers     kdelayctl: tables without their header row\n"  \
        "  -h, --help           this help\n"                                   \
        "A setting comes from the command line, else the environment, else "   \
        "the\n"                                                                \
        "config file, else the default (docs/configuration.md).\n"

#define KD_CLI_OVERRIDES_MAX 64

typedef struct kd_cli {
        const char *prog;        /* "kdelayctl topics create", for messages */
        char prog_buf[64];       /* prog when kd_cli_subverb built it */
        const char *config_path; /* borrowed from argv */
        const char *overrides[KD_CLI_OVERRIDES_MAX]; /* "name=value" */
        char *owned[KD_CLI_OVERRIDES_MAX];           /* what we built */
        int override_cnt;
        int verbose;
        int quiet; /* -q: warnings and errors only on stderr */
        int info;  /* log info lines without -v (daemons) */
        /* "name=value" applied before the config file (may be NULL). */
        const char *const *defaults;
        kdelay_conf_t *conf; /* owned after kd_cli_conf() */
} kd_cli_t;

void kd_cli_init(kd_cli_t *cli, const char *prog);
void kd_cli_clear(kd_cli_t *cli);

/* Handles one common option from getopt_long. Returns 1 when handled, 0 when
 * the option is not a common one, -1 on a usage error (already printed). */
int kd_cli_option(kd_cli_t *cli, int opt, const char *arg);

/* kdelayctl's common options before the verb (`kdelayctl -b B VERB ...`):
 * finds the verb, *verbi = its index (argc when there is none), and keeps
 * the options before it for kd_cli_parse, which applies them before the
 * verb's own. Returns KD_EXIT_OK; KD_CLI_HELP_SHOWN for -h/--help (nothing
 * printed); KD_EXIT_USAGE after printing why (an option that is not a
 * common one, a missing value). argv must outlive the parse. */
int kd_cli_leading(int argc, char **argv, int *verbi);

/* A verb's own option handler: returns KD_EXIT_OK, or an exit code after
 * printing why. */
typedef int(kd_cli_opt_fn)(int opt, const char *arg, void *ctx);

#define KD_CLI_HELP_SHOWN (-1)

/* Parses argv (argv[0] = verb) with the verb's own options (own_short,
 * own_long terminated by a zero entry; own option values must be >= 0x200
 * or a character) plus the common set. help is printed for -h, followed by
 * KD_CLI_HELP. Returns KD_EXIT_OK with *argi = index of the first operand,
 * KD_CLI_HELP_SHOWN after --help, or an exit code. Then builds the conf
 * (kd_cli_conf) unless help was shown. */
int kd_cli_parse(kd_cli_t *cli, int argc, char **argv, const char *own_short,
                 const struct option *own_long, kd_cli_opt_fn *on_opt,
                 void *ctx, const char *help, int *argi);

/* The sub-verb of `kdelayctl VERB SUB [OPTIONS]` (argv[0] = VERB, argv[1]
 * = SUB): initialises cli (kd_cli_init) with prog "<verb> <sub>" ("<verb>"
 * when there is none) and returns SUB's index in subs (NULL-terminated).
 * Otherwise returns -1 with *rcp set: KD_EXIT_OK after printing help and
 * KD_CLI_HELP for -h/--help, or KD_EXIT_USAGE after saying which sub-verbs
 * there are. Then the caller goes on with kd_cli_parse(argc - 1, argv + 1). */
int kd_cli_subverb(kd_cli_t *cli, const char *verb, const char *const *subs,
                   const char *help, int argc, char **argv, int *rcp);

/* Builds cli->conf: defaults, cli->defaults, then the config file (-c,
 * else $KDELAY_CONFIG, else KD_DEFAULT_CONFIG when it exists), then the
 * environment ($KDELAY_KAFKA_CONFIG, $KDELAY_BROKERS, $KDELAY_MYSQL_URL;
 * each unless the command line sets its property), then the command line's
 * overrides in order. Prints the error and returns an exit code
 * (KD_EXIT_OK on success). */
int kd_cli_conf(kd_cli_t *cli);

/* Prints "<prog>: message" and a hint to stderr; returns KD_EXIT_USAGE. */
int kd_cli_usage_error(const kd_cli_t *cli, const char *fmt, ...)
    __attribute__((format(printf, 2, 3)));

/* Logs one event line to stderr: "ts=... level=... prog=... <line>". */
void kd_cli_log(const kd_cli_t *cli, kdelay_log_level_t level, const char *fmt,
                ...) __attribute__((format(printf, 3, 4)));

/* kdelay_log_cb_t printing to stderr; opaque is the kd_cli_t. */
void kd_cli_log_cb(kdelay_log_level_t level, const char *line, void *opaque);

/* A client on cli->conf, which it takes (cli->conf is NULL then). On
 * failure prints why and returns the exit code; *clientp stays NULL. */
int kd_cli_client(kd_cli_t *cli, kdelay_client_t **clientp);

/* 0 after --no-headers: a listing prints its rows without the header row
 * (kd_cli_option records it for the process). */
int kd_cli_headers(void);

/* Maps a library error to an exit code. */
int kd_cli_exit_code(kdelay_err_t err);

#endif
