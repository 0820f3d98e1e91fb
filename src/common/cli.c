/* SPDX-License-Identifier: Apache-2.0 */
/* What every kdelay binary shares: common options, conf, stderr logging. */
#include "cli.h"

#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/time.h>
#include <time.h>
#include <unistd.h>

#include "kd_log.h"

/* --no-headers, for the whole process: listings print through functions
 * that do not all see the kd_cli_t. */
static int kd_cli_no_headers;

int kd_cli_headers(void)
{
        return !kd_cli_no_headers;
}

void kd_cli_init(kd_cli_t *cli, const char *prog)
{
        memset(cli, 0, sizeof(*cli));
        cli->prog = prog;
}

void kd_cli_clear(kd_cli_t *cli)
{
        for (int i = 0; i < cli->override_cnt; i++)
                free(cli->owned[i]);
        kdelay_conf_destroy(cli->conf);
        cli->conf = NULL;
        cli->override_cnt = 0;
}

int kd_cli_usage_error(const kd_cli_t *cli, const char *fmt, ...)
{
        va_list ap;
        fprintf(stderr, "%s: ", cli->prog);
        va_start(ap, fmt);
        vfprintf(stderr, fmt, ap);
        va_end(ap);
        fprintf(stderr, "\nTry '%s --help'.\n", cli->prog);
        return KD_EXIT_USAGE;
}

/* Records a "name=value" override (name NULL: pair is complete). */
static int add_override(kd_cli_t *cli, const char *name, const char *value)
{
        if (cli->override_cnt == KD_CLI_OVERRIDES_MAX) {
                kd_cli_usage_error(cli, "too many overrides");
                return -1;
        }
        size_t n = (name ? strlen(name) + 1 : 0) + strlen(value) + 1;
        char *pair = malloc(n);
        if (!pair) {
                fprintf(stderr, "%s: out of memory\n", cli->prog);
                return -1;
        }
        snprintf(pair, n, "%s%s%s", name ? name : "", name ? "=" : "", value);
        cli->owned[cli->override_cnt] = pair;
        cli->overrides[cli->override_cnt++] = pair;
        return 1;
}

int kd_cli_option(kd_cli_t *cli, int opt, const char *arg)
{
        switch (opt) {
        case 'c':
                cli->config_path = arg;
                return 1;
        case 'b':
                return add_override(cli, "brokers", arg);
        case KD_CLI_OPT_MYSQL:
                return add_override(cli, "mysql.url", arg);
        case KD_CLI_OPT_KAFKA_CONFIG:
                return add_override(cli, "kafka_config", arg);
        case 'X':
                if (!strchr(arg, '=') || arg[0] == '=') {
                        kd_cli_usage_error(
                            cli, "-X expects NAME=VALUE, got \"%s\"", arg);
                        return -1;
                }
                return add_override(cli, NULL, arg);
        case 'v':
                cli->verbose = 1;
                return 1;
        case 'q':
                cli->quiet = 1;
                return 1;
        case KD_CLI_OPT_NO_HEADERS:
                if (cli->info) { /* a daemon prints no tables */
                        kd_cli_usage_error(cli, "unknown option --no-headers");
                        return -1;
                }
                kd_cli_no_headers = 1;
                return 1;
        default:
                return 0;
        }
}

/* 1 when the command line sets property name (-X name=..., or the option
 * for it). */
static int overridden(const kd_cli_t *cli, const char *name)
{
        size_t n = strlen(name);
        for (int i = 0; i < cli->override_cnt; i++)
                if (!strncmp(cli->overrides[i], name, n) &&
                    cli->overrides[i][n] == '=')
                        return 1;
        return 0;
}

/* The settings the environment gives, between the config file and the
 * command line; the config file's own variable, KDELAY_CONFIG, is read
 * before. */
static const struct {
        const char *var, *prop;
} kd_cli_env[] = {
    {"KDELAY_KAFKA_CONFIG", "kafka_config"},
    {"KDELAY_BROKERS", "brokers"},
    {"KDELAY_MYSQL_URL", "mysql.url"},
};

int kd_cli_conf(kd_cli_t *cli)
{
        char errstr[512];
        cli->conf = kdelay_conf_new();
        if (!cli->conf) {
                fprintf(stderr, "%s: out of memory\n", cli->prog);
                return KD_EXIT_ERROR;
        }
        kdelay_conf_set_log_cb(cli->conf, kd_cli_log_cb,
                               cli->verbose ? KDELAY_LOG_DEBUG
                               : cli->quiet ? KDELAY_LOG_WARNING
                               : cli->info  ? KDELAY_LOG_INFO
                                            : KDELAY_LOG_NOTICE,
                               cli);
        for (size_t i = 0; cli->defaults && cli->defaults[i]; i++) {
                if (kdelay_conf_set_pair(cli->conf, cli->defaults[i], errstr,
                                         sizeof(errstr)) != KDELAY_OK) {
                        fprintf(stderr, "%s: %s\n", cli->prog, errstr);
                        return KD_EXIT_ERROR;
                }
        }
        const char *path = cli->config_path;
        if (!path)
                path = getenv("KDELAY_CONFIG");
        if (!path && access(KD_DEFAULT_CONFIG, R_OK) == 0)
                path = KD_DEFAULT_CONFIG;
        if (path && kdelay_conf_load_file(cli->conf, path, errstr,
                                          sizeof(errstr)) != KDELAY_OK) {
                fprintf(stderr, "%s: config: %s\n", cli->prog, errstr);
                return KD_EXIT_USAGE;
        }
        for (size_t i = 0; i < sizeof(kd_cli_env) / sizeof(kd_cli_env[0]);
             i++) {
                const char *v = getenv(kd_cli_env[i].var);
                if (!v || !*v || overridden(cli, kd_cli_env[i].prop))
                        continue;
                if (kdelay_conf_set(cli->conf, kd_cli_env[i].prop, v, errstr,
                                    sizeof(errstr)) != KDELAY_OK) {
                        fprintf(stderr, "%s: $%s: %s\n", cli->prog,
                                kd_cli_env[i].var, errstr);
                        return KD_EXIT_USAGE;
                }
        }
        for (int i = 0; i < cli->override_cnt; i++) {
                if (kdelay_conf_set_pair(cli->conf, cli->overrides[i], errstr,
                                         sizeof(errstr)) != KDELAY_OK)
                        return kd_cli_usage_error(cli, "%s", errstr);
        }
        return KD_EXIT_OK;
}

static const char *level_name(kdelay_log_level_t level)
{
        switch (level) {
        case KDELAY_LOG_ERROR:
                return "error";
        case KDELAY_LOG_WARNING:
                return "warn";
        case KDELAY_LOG_NOTICE:
                return "notice";
        case KDELAY_LOG_INFO:
                return "info";
        default:
                return "debug";
        }
}

static void log_line(const char *prog, kdelay_log_level_t level,
                     const char *line)
{
        struct timeval tv;
        struct tm tm;
        char ts[32], qprog[128];
        gettimeofday(&tv, NULL);
        gmtime_r(&tv.tv_sec, &tm);
        strftime(ts, sizeof(ts), "%Y-%m-%dT%H:%M:%S", &tm);
        /* One fprintf per line so concurrent lines do not interleave. */
        fprintf(stderr, "ts=%s.%03ldZ level=%s prog=%s %s\n", ts,
                (long)(tv.tv_usec / 1000), level_name(level),
                kd_log_quote(prog, qprog, sizeof(qprog)), line);
}

void kd_cli_log_cb(kdelay_log_level_t level, const char *line, void *opaque)
{
        const kd_cli_t *cli = opaque;
        log_line(cli ? cli->prog : "kdelay", level, line);
}

void kd_cli_log(const kd_cli_t *cli, kdelay_log_level_t level, const char *fmt,
                ...)
{
        if (level == KDELAY_LOG_DEBUG && !cli->verbose)
                return;
        /* -q: informational lines (progress, notes) go; problems stay. */
        if (cli->quiet && !cli->verbose && level > KDELAY_LOG_WARNING)
                return;
        char line[KD_LOG_LINE_MAX];
        va_list ap;
        va_start(ap, fmt);
        kd_log_vformat(line, sizeof(line), fmt, ap);
        va_end(ap);
        log_line(cli->prog, level, line);
}

int kd_cli_client(kd_cli_t *cli, kdelay_client_t **clientp)
{
        char errstr[512];
        *clientp = NULL;
        kdelay_err_t err =
            kdelay_client_new(clientp, cli->conf, errstr, sizeof(errstr));
        if (err) {
                fprintf(stderr, "%s: %s\n", cli->prog, errstr);
                return kd_cli_exit_code(err);
        }
        cli->conf = NULL; /* the client's now */
        return KD_EXIT_OK;
}

int kd_cli_exit_code(kdelay_err_t err)
{
        switch (err) {
        case KDELAY_OK:
                return KD_EXIT_OK;
        case KDELAY_ERR_TOO_LATE:
                return KD_EXIT_TOO_LATE;
        case KDELAY_ERR_NOT_FOUND:
                return KD_EXIT_NOT_FOUND;
        case KDELAY_ERR_DEAD:
                return KD_EXIT_DEAD;
        case KDELAY_ERR_INVALID_ARG:
        case KDELAY_ERR_INVALID_ID:
        case KDELAY_ERR_INVALID_TOPIC:
        case KDELAY_ERR_INVALID_TIME:
        case KDELAY_ERR_INVALID_DURATION:
        case KDELAY_ERR_INVALID_HEADER:
        case KDELAY_ERR_INVALID_TIERS:
        case KDELAY_ERR_CONFIG:
        case KDELAY_ERR_UNKNOWN_PROPERTY:
        case KDELAY_ERR_NOT_CONFIGURED:
                return KD_EXIT_USAGE; /* fix the command or config */
        default:
                return KD_EXIT_ERROR;
        }
}

/* "'a', 'b' or 'c'", cut short if buf is too small. */
static void subverb_list(const char *const *subs, char *buf, size_t size)
{
        size_t n = 0, off = 0;
        while (subs[n])
                n++;
        buf[0] = '\0';
        for (size_t i = 0; i < n; i++) {
                const char *sep = i == 0 ? "" : i + 1 == n ? " or " : ", ";
                int w = snprintf(buf + off, size - off, "%s'%s'", sep, subs[i]);
                if (w < 0 || (size_t)w >= size - off)
                        return;
                off += (size_t)w;
        }
}

int kd_cli_subverb(kd_cli_t *cli, const char *verb, const char *const *subs,
                   const char *help, int argc, char **argv, int *rcp)
{
        char expected[256];
        subverb_list(subs, expected, sizeof(expected));
        kd_cli_init(cli, verb);
        if (argc >= 2 && argv[1][0] != '-') {
                for (int i = 0; subs[i]; i++) {
                        if (strcmp(argv[1], subs[i]))
                                continue;
                        snprintf(cli->prog_buf, sizeof(cli->prog_buf), "%s %s",
                                 verb, subs[i]);
                        cli->prog = cli->prog_buf;
                        return i;
                }
                *rcp = kd_cli_usage_error(
                    cli, "unknown subcommand \"%s\" (expected %s)", argv[1],
                    expected);
                return -1;
        }
        if (argc >= 2 &&
            (!strcmp(argv[1], "-h") || !strcmp(argv[1], "--help"))) {
                fputs(help, stdout);
                fputs(KD_CLI_HELP, stdout);
                *rcp = KD_EXIT_OK;
                return -1;
        }
        *rcp = kd_cli_usage_error(cli, "expected %s", expected);
        return -1;
}

/* The common options before kdelayctl's verb (kd_cli_leading). */
static struct {
        int opt;
        const char *arg;
} kd_cli_lead[KD_CLI_OVERRIDES_MAX];
static int kd_cli_lead_cnt;

int kd_cli_leading(int argc, char **argv, int *verbi)
{
        static const struct option common[] = {KD_CLI_LONGOPTS, {0}};
        kd_cli_t cli;
        kd_cli_init(&cli, "kdelayctl");
        kd_cli_lead_cnt = 0;
        optind = 0; /* glibc: start afresh, read the '+' again */
        opterr = 0;
        int opt;
        /* '+': the first operand, the verb, ends the options. */
        while ((opt = getopt_long(argc, argv, "+:" KD_CLI_SHORTOPTS, common,
                                  NULL)) != -1) {
                switch (opt) {
                case 'h':
                        return KD_CLI_HELP_SHOWN;
                case ':':
                        return kd_cli_usage_error(
                            &cli, "option %s needs a value", argv[optind - 1]);
                case '?':
                        return kd_cli_usage_error(
                            &cli,
                            "unknown option %s (before the verb only "
                            "the common options)",
                            argv[optind - 1]);
                default:
                        if (kd_cli_lead_cnt == KD_CLI_OVERRIDES_MAX)
                                return kd_cli_usage_error(&cli,
                                                          "too many options");
                        kd_cli_lead[kd_cli_lead_cnt].opt = opt;
                        kd_cli_lead[kd_cli_lead_cnt++].arg = optarg;
                }
        }
        *verbi = optind;
        return KD_EXIT_OK;
}

int kd_cli_parse(kd_cli_t *cli, int argc, char **argv, const char *own_short,
                 const struct option *own_long, kd_cli_opt_fn *on_opt,
                 void *ctx, const char *help, int *argi)
{
        static const struct option common[] = {KD_CLI_LONGOPTS};
        struct option longopts[64];
        size_t n = 0;
        char shortopts[64];

        for (; own_long && own_long[n].name && n < 40; n++)
                longopts[n] = own_long[n];
        for (size_t i = 0; i < sizeof(common) / sizeof(common[0]); i++)
                longopts[n++] = common[i];
        memset(&longopts[n], 0, sizeof(longopts[n]));
        /* Options may follow operands (GNU permutation); ':' reports
         * missing arguments. */
        snprintf(shortopts, sizeof(shortopts), ":%s%s", own_short,
                 KD_CLI_SHORTOPTS);

        /* kdelayctl's common options before the verb come first. */
        for (int i = 0; i < kd_cli_lead_cnt; i++)
                if (kd_cli_option(cli, kd_cli_lead[i].opt, kd_cli_lead[i].arg) <
                    0)
                        return KD_EXIT_USAGE;
        optind = 0; /* glibc: start afresh (kd_cli_leading used '+') */
        opterr = 0;
        int opt;
        while ((opt = getopt_long(argc, argv, shortopts, longopts, NULL)) !=
               -1) {
                int rc;
                switch (opt) {
                case 'h':
                        fputs(help, stdout);
                        fputs(KD_CLI_HELP, stdout);
                        return KD_CLI_HELP_SHOWN;
                case ':':
                        return kd_cli_usage_error(
                            cli, "option %s needs a value", argv[optind - 1]);
                case '?':
                        return kd_cli_usage_error(cli, "unknown option %s",
                                                  argv[optind - 1]);
                default:
                        rc = kd_cli_option(cli, opt, optarg);
                        if (rc < 0)
                                return KD_EXIT_USAGE;
                        if (rc == 0) {
                                rc = on_opt ? on_opt(opt, optarg, ctx)
                                            : KD_EXIT_USAGE;
                                if (rc != KD_EXIT_OK)
                                        return rc;
                        }
                }
        }
        *argi = optind;
        return kd_cli_conf(cli);
}
