#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# stack.sh - local dev/test stack for kdelay: a single-node KRaft Apache Kafka
# broker (or a cluster of three, --nodes 3) and a private MariaDB instance, all
# bound to 127.0.0.1 and keeping all their state under one directory (default
# <repo>/.stack).
#
# Run 'deploy/local/stack.sh --help' for usage.
set -Eeuo pipefail

PROG=stack.sh
SCRIPT_DIR=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd -P)
REPO_ROOT=$(cd "$SCRIPT_DIR/../.." && pwd -P)

KAFKA_READY_TIMEOUT=${KDELAY_KAFKA_READY_TIMEOUT:-90}
MYSQL_READY_TIMEOUT=${KDELAY_MYSQL_READY_TIMEOUT:-60}
STOP_TIMEOUT=${KDELAY_STOP_TIMEOUT:-60}
POLL=0.2

log() { printf '%s: %s\n' "$PROG" "$*" >&2; }
die() { log "error: $*"; exit 1; }
trap 'rc=$?; log "error: unexpected failure (exit $rc) at line $LINENO: $BASH_COMMAND"' ERR

usage() {
    cat <<'EOF'
Usage: deploy/local/stack.sh [options] VERB

Local dev/test stack: single-node KRaft Kafka (or three nodes, --nodes 3) +
private MariaDB on 127.0.0.1.

Verbs:
  up            start Kafka and MariaDB (whatever is not running yet) and wait
                until both answer; idempotent
  down          stop both (SIGTERM, then SIGKILL after a deadline); idempotent
                  --purge  also delete the state directory (all data)
                  --kill   SIGKILL immediately (simulate a crash)
  status        show what is running; exit 0 if everything answers, 3 if not
  env           print 'export NAME=value' lines to eval, for kdelayctl,
                  kdelay-forwarder and the tests: KDELAY_BROKERS,
                  KDELAY_MYSQL_URL, KDELAY_STACK_DIR, KDELAY_KAFKA_VERSION,
                  KDELAY_KAFKA_NODES, KDELAY_KAFKA_SECURITY (and KDELAY_MYSQL_CA
                  with --mysql-tls on; KDELAY_KAFKA_CONFIG and
                  KDELAY_CLIENT_CONFIG when secured)
  kafka-jars    fetch the Kafka jars (once, cached) and print their directory
                (deploy/docker/standin-images.sh copies them into an image)
  kafka-start   start only Kafka (keeps data), wait until it answers
  kafka-stop    stop only Kafka (keeps data); --kill for SIGKILL
  node-stop I   stop Kafka node I (0..N-1) of a multi-node stack (keeps its
                data); --kill for SIGKILL (a crash)
  node-start I  start Kafka node I again and wait until it answers a metadata
                request listing every node and is back in the ISR of every
                partition it replicates
  mysql-start   start only the private MariaDB (keeps data)
  mysql-stop    stop only the private MariaDB (keeps data); --kill for SIGKILL
  mysql-pause   freeze the private MariaDB (SIGSTOP): connections stay open
                and every statement hangs, as on a stalled server
  mysql-resume  let a frozen MariaDB go on (SIGCONT)
  mysql-readonly on|off
                SET GLOBAL read_only: statements of users without the
                READ ONLY ADMIN privilege (not root) fail, as on a demoted
                primary
  topic NAME    create topic NAME if it does not exist (a target topic for
                tasks; Kafka here does not auto-create topics)
                  --partitions N  (default 3)
  acl ARGS...   secured stacks: run Kafka's AclCommand (kafka-acls) as the
                admin with ARGS (everything after 'acl'), e.g.
                  acl --add --allow-principal User:producer --operation Write
                      --topic kdelay.tier. --resource-pattern-type prefixed

Options (an option overrides its environment variable):
  --stack-dir DIR     KDELAY_STACK_DIR          state dir (default <repo>/.stack)
  --kafka-port N      KDELAY_KAFKA_PORT         Kafka PLAINTEXT port (default 19092);
                                                the KRaft controller uses N+1
  --kafka-version V   KDELAY_KAFKA_VERSION      Apache Kafka version to run (default:
                                                deploy/local/kafka/pom.xml's; 3.9.x and
                                                4.x are supported), fetched from Maven
                                                Central; a stack dir keeps one version's
                                                data ('down --purge' to change it)
  --nodes N           KDELAY_KAFKA_NODES        Kafka nodes: 1 (default) or 3. With 3,
                                                three combined broker+controller KRaft
                                                nodes; node I listens on N+2*I (clients)
                                                and N+2*I+1 (controller), where N is the
                                                Kafka port, and has node.id I+1; topics
                                                default to replication factor 3 and
                                                min.insync.replicas=2. A stack dir keeps
                                                one node count's data
  --mysql-port N      KDELAY_MYSQL_PORT         private MariaDB port (default 13306)
  --mysql-url URL     KDELAY_MYSQL_URL_EXTERNAL use an existing MySQL/MariaDB
                      (mysql://user[:password]@host[:port]/db) instead of a
                      private instance; 'up' only checks that it answers and
                      creates the database. An empty value selects the private
                      instance again.
  --mysql-tls on|off  KDELAY_MYSQL_TLS          the private MariaDB serves TLS only
                      (require_secure_transport=ON) with a certificate of a
                      private CA made with openssl in <stack-dir>/tls/; 'env'
                      then gives a URL with ssl-mode=VERIFY_IDENTITY and the
                      CA, and KDELAY_MYSQL_CA (default off)
  --security MODE     KDELAY_KAFKA_SECURITY     none (default: PLAINTEXT, no ACLs),
                      sasl_ssl (SCRAM-SHA-512 over TLS) or mtls (TLS client
                      certificates): a private CA and certificates in
                      <stack-dir>/kafka-tls/, principals User:admin (super
                      user), User:forwarder, User:producer, the
                      StandardAuthorizer with allow.everyone.if.no.acl.found=
                      false; 'env' adds KDELAY_KAFKA_CONFIG (read by kdelay's
                      binaries) and KDELAY_CLIENT_CONFIG, both naming
                      kafka-tls/admin.properties: the admin's librdkafka
                      properties, password inline (0600), for any librdkafka
                      client (the others' are kafka-tls/client-<principal>
                      .properties, passwords by file: reference). A stack
                      dir keeps its mode ('down --purge' to change it).
                      sasl_ssl needs Kafka 3.9.x while kcat's librdkafka is
                      older than 2.6.1 (docs/security.md).
  -h, --help          show this help

Ports, version, node count and the external URL given to a starting verb are
remembered in <stack-dir>/stack.conf and reused by later verbs unless
overridden. 'down' stops every Kafka node it finds in the stack dir.

Other environment: KDELAY_KAFKA_READY_TIMEOUT (90), KDELAY_MYSQL_READY_TIMEOUT
(60), KDELAY_STOP_TIMEOUT (60) in seconds; KDELAY_KAFKA_JAVA_OPTS (extra JVM
options for the broker); KDELAY_MYSQL_GENERAL_LOG=FILE (the private MariaDB
logs every statement to FILE, for tools/sqlcheck; remembered like the
ports, set but empty to stop); JAVA_HOME.

The private MariaDB runs with MySQL 8.0's default sql_mode plus
STRICT_ALL_TABLES (ONLY_FULL_GROUP_BY, STRICT_TRANS_TABLES, NO_ZERO_DATE,
...), so that what passes here passes on MySQL 8 (docs/fate-protocol.md,
"Servers").

Logs: <stack-dir>/kafka/server.log (broker, log4j), <stack-dir>/kafka/stdout.log
(JVM output), <stack-dir>/mysql/error.log (MariaDB). With --nodes 3 each node
has its own directory <stack-dir>/kafka/nodeI/ (data, server.properties,
server.log, stdout.log, kafka.pid).

Typical use:
  deploy/local/stack.sh up && eval "$(deploy/local/stack.sh env)"
  deploy/local/stack.sh --stack-dir .stack-3n --kafka-port 19292 \
      --mysql-port 13506 --nodes 3 up          # a 3-node cluster
  deploy/local/stack.sh --stack-dir .stack-3n node-stop 1 --kill
  deploy/local/stack.sh --stack-dir .stack-3n node-start 1
EOF
}

# ---------------------------------------------------------------- arguments
verb=""
opt_purge=0
opt_kill=0
cli_stack_dir=""
cli_kafka_port=""
cli_kafka_version=""
cli_nodes=""
cli_mysql_port=""
cli_mysql_url=""
cli_mysql_url_set=0
cli_mysql_tls=""
cli_security=""
acl_args=()
topic_name=""
opt_partitions=3

need_arg() { (($# >= 2)) || die "option $1 needs an argument"; }

while (($#)); do
    if [[ $verb == acl ]]; then # the rest is AclCommand's
        acl_args=("$@")
        break
    fi
    case $1 in
        -h | --help) usage; exit 0 ;;
        --purge) opt_purge=1; shift ;;
        --kill) opt_kill=1; shift ;;
        --partitions) need_arg "$@"; opt_partitions=$2; shift 2 ;;
        --stack-dir) need_arg "$@"; cli_stack_dir=$2; shift 2 ;;
        --stack-dir=*) cli_stack_dir=${1#*=}; shift ;;
        --kafka-port) need_arg "$@"; cli_kafka_port=$2; shift 2 ;;
        --kafka-port=*) cli_kafka_port=${1#*=}; shift ;;
        --kafka-version) need_arg "$@"; cli_kafka_version=$2; shift 2 ;;
        --kafka-version=*) cli_kafka_version=${1#*=}; shift ;;
        --nodes) need_arg "$@"; cli_nodes=$2; shift 2 ;;
        --nodes=*) cli_nodes=${1#*=}; shift ;;
        --mysql-port) need_arg "$@"; cli_mysql_port=$2; shift 2 ;;
        --mysql-port=*) cli_mysql_port=${1#*=}; shift ;;
        --mysql-url) need_arg "$@"; cli_mysql_url=$2; cli_mysql_url_set=1; shift 2 ;;
        --mysql-url=*) cli_mysql_url=${1#*=}; cli_mysql_url_set=1; shift ;;
        --mysql-tls) need_arg "$@"; cli_mysql_tls=$2; shift 2 ;;
        --mysql-tls=*) cli_mysql_tls=${1#*=}; shift ;;
        --security) need_arg "$@"; cli_security=$2; shift 2 ;;
        --security=*) cli_security=${1#*=}; shift ;;
        -*) die "unknown option: $1 (see --help)" ;;
        *)
            if [[ -z $verb ]]; then
                verb=$1
            elif [[ ($verb == topic || $verb == mysql-readonly || $verb == node-*) && -z $topic_name ]]; then
                topic_name=$1
            else
                die "only one verb allowed (got '$verb' and '$1')"
            fi
            shift
            ;;
    esac
done

case $verb in
    up | down | status | env | kafka-jars | kafka-start | kafka-stop | mysql-start | mysql-stop | mysql-pause | mysql-resume) ;;
    topic) [[ -n $topic_name ]] || die "topic needs a NAME" ;;
    acl) ((${#acl_args[@]})) || die "acl needs AclCommand's arguments (e.g. --list)" ;;
    mysql-readonly) [[ $topic_name == on || $topic_name == off ]] || die "mysql-readonly needs on or off" ;;
    node-start | node-stop) [[ $topic_name =~ ^[0-9]+$ ]] || die "$verb needs a node number I (0..N-1)" ;;
    "") usage >&2; die "missing verb" ;;
    *) die "unknown verb: $verb (see --help)" ;;
esac
((opt_purge == 0)) || [[ $verb == down ]] || die "--purge only applies to 'down'"
((opt_kill == 0)) || [[ $verb == down || $verb == *-stop ]] || die "--kill only applies to 'down', 'kafka-stop', 'node-stop' and 'mysql-stop'"

# ---------------------------------------------------------------- settings
STACK_DIR=${cli_stack_dir:-${KDELAY_STACK_DIR:-$REPO_ROOT/.stack}}
[[ $STACK_DIR == /* ]] || STACK_DIR=$PWD/$STACK_DIR
STACK_DIR=${STACK_DIR%/}
[[ -n $STACK_DIR ]] || die "the stack directory must not be /"
CONF=$STACK_DIR/stack.conf
MARKER=$STACK_DIR/.kdelay-stack

SAVED_KAFKA_PORT=""
SAVED_KAFKA_VERSION=""
SAVED_KAFKA_NODES=""
SAVED_MYSQL_PORT=""
SAVED_MYSQL_URL_EXTERNAL=""
SAVED_MYSQL_TLS=""
SAVED_MYSQL_GENERAL_LOG=""
SAVED_KAFKA_SECURITY=""
if [[ -f $CONF ]]; then
    # shellcheck source=/dev/null
    source "$CONF"
fi

KAFKA_PORT=${cli_kafka_port:-${KDELAY_KAFKA_PORT:-${SAVED_KAFKA_PORT:-19092}}}
# The broker's version: the option, the environment, the last start's, or
# the default (pom.xml's kafka.version).
KAFKA_VERSION=${cli_kafka_version:-${KDELAY_KAFKA_VERSION:-${SAVED_KAFKA_VERSION:-}}}
[[ -z $KAFKA_VERSION || $KAFKA_VERSION =~ ^[0-9]+\.[0-9]+\.[0-9]+$ ]] ||
    die "bad Kafka version '$KAFKA_VERSION' (want MAJOR.MINOR.PATCH, e.g. 4.1.1)"
KAFKA_NODES=${cli_nodes:-${KDELAY_KAFKA_NODES:-${SAVED_KAFKA_NODES:-1}}}
[[ $KAFKA_NODES == 1 || $KAFKA_NODES == 3 ]] || die "--nodes must be 1 or 3 (got '$KAFKA_NODES')"
MYSQL_PORT=${cli_mysql_port:-${KDELAY_MYSQL_PORT:-${SAVED_MYSQL_PORT:-13306}}}
if ((cli_mysql_url_set)); then
    MYSQL_URL_EXTERNAL=$cli_mysql_url
elif [[ -n ${KDELAY_MYSQL_URL_EXTERNAL+set} ]]; then
    MYSQL_URL_EXTERNAL=$KDELAY_MYSQL_URL_EXTERNAL
else
    MYSQL_URL_EXTERNAL=$SAVED_MYSQL_URL_EXTERNAL
fi

# MySQL 8.0's default sql_mode, plus STRICT_ALL_TABLES.
MYSQL_SQL_MODE=ONLY_FULL_GROUP_BY,STRICT_TRANS_TABLES,STRICT_ALL_TABLES,NO_ZERO_IN_DATE,NO_ZERO_DATE,ERROR_FOR_DIVISION_BY_ZERO,NO_ENGINE_SUBSTITUTION
MYSQL_TLS=${cli_mysql_tls:-${KDELAY_MYSQL_TLS:-${SAVED_MYSQL_TLS:-off}}}
# The general log, kept across restarts (a test that stops MariaDB); set
# but empty: off.
MYSQL_GENERAL_LOG=${KDELAY_MYSQL_GENERAL_LOG-$SAVED_MYSQL_GENERAL_LOG}
[[ $MYSQL_TLS == on || $MYSQL_TLS == off ]] || die "--mysql-tls must be on or off (got '$MYSQL_TLS')"

KAFKA_SECURITY=${cli_security:-${KDELAY_KAFKA_SECURITY:-${SAVED_KAFKA_SECURITY:-none}}}
# kafka-security.sh configures one node's listeners and certificates.
[[ $KAFKA_SECURITY == none || $KAFKA_NODES == 1 ]] ||
    die "--security $KAFKA_SECURITY runs on one Kafka node only (not --nodes $KAFKA_NODES)"

check_port() { # name value
    if ! [[ $2 =~ ^[0-9]+$ ]] || (($2 < 1024 || $2 > 65534)); then
        die "$1 must be a number between 1024 and 65534 (got '$2')"
    fi
}
check_port "Kafka port" "$KAFKA_PORT"
check_port "MySQL port" "$MYSQL_PORT"
# Node I listens on KAFKA_PORT+2*I (clients) and the port after (controller).
KAFKA_LAST_PORT=$((KAFKA_PORT + 2 * KAFKA_NODES - 1))
check_port "Kafka's last port" "$KAFKA_LAST_PORT"
CONTROLLER_PORT=$((KAFKA_PORT + 1))
if ((KAFKA_NODES == 1)); then
    [[ -n $MYSQL_URL_EXTERNAL ]] || ((MYSQL_PORT != KAFKA_PORT && MYSQL_PORT != CONTROLLER_PORT)) ||
        die "MySQL port $MYSQL_PORT collides with the Kafka ports $KAFKA_PORT/$CONTROLLER_PORT"
else
    [[ -n $MYSQL_URL_EXTERNAL ]] || ((MYSQL_PORT < KAFKA_PORT || MYSQL_PORT > KAFKA_LAST_PORT)) ||
        die "MySQL port $MYSQL_PORT collides with the Kafka ports $KAFKA_PORT-$KAFKA_LAST_PORT"
fi

BROKERS=127.0.0.1:$KAFKA_PORT
for ((i = 1; i < KAFKA_NODES; i++)); do BROKERS+=,127.0.0.1:$((KAFKA_PORT + 2 * i)); done
MYSQL_DB=kdelay

KAFKA_ROOT=$STACK_DIR/kafka
KAFKA_LIBS=""
MVN=""
LOG4J2_TOOLS_PROPS=$KAFKA_ROOT/log4j2-tools.properties
LOG4J_TOOLS_PROPS=$KAFKA_ROOT/log4j-tools.properties

# select_node I: points the per-node variables (NODE_*, KAFKA_DIR,
# KAFKA_DATA, KAFKA_PROPS, KAFKA_LOG, KAFKA_STDOUT, KAFKA_PIDFILE,
# LOG4J_PROPS, LOG4J2_PROPS) at Kafka node I. A single-node stack's only node
# keeps its files directly in <stack-dir>/kafka.
select_node() {
    NODE=$1
    NODE_ID=$((NODE + 1))
    NODE_PORT=$((KAFKA_PORT + 2 * NODE))
    NODE_CTRL_PORT=$((NODE_PORT + 1))
    NODE_ADDR=127.0.0.1:$NODE_PORT
    if ((KAFKA_NODES == 1)); then
        NODE_NAME=Kafka
        KAFKA_DIR=$KAFKA_ROOT
        LOG4J_PROPS=$STACK_DIR/log4j.properties
        LOG4J2_PROPS=$STACK_DIR/log4j2.properties
    else
        NODE_NAME="Kafka node $NODE"
        KAFKA_DIR=$KAFKA_ROOT/node$NODE
        LOG4J_PROPS=$KAFKA_DIR/log4j.properties
        LOG4J2_PROPS=$KAFKA_DIR/log4j2.properties
    fi
    KAFKA_DATA=$KAFKA_DIR/data
    KAFKA_PROPS=$KAFKA_DIR/server.properties
    KAFKA_LOG=$KAFKA_DIR/server.log
    KAFKA_STDOUT=$KAFKA_DIR/stdout.log
    KAFKA_PIDFILE=$KAFKA_DIR/kafka.pid
}
select_node 0

MYSQL_DIR=$STACK_DIR/mysql
TLS_DIR=$STACK_DIR/tls
MYSQL_DATA=$MYSQL_DIR/data
MYSQL_SOCK=$MYSQL_DIR/mysqld.sock
MYSQL_PIDFILE=$MYSQL_DIR/server.pid # ours; mariadbd rewrites/deletes its own mysqld.pid
MYSQL_SERVER_PIDFILE=$MYSQL_DIR/mysqld.pid
MYSQL_ERRLOG=$MYSQL_DIR/error.log
MYSQL_INSTALLED=$MYSQL_DIR/.installed

POM=$SCRIPT_DIR/kafka/pom.xml

# --security sasl_ssl|mtls: certificates, principals, broker settings, acl
# shellcheck source=deploy/local/kafka-security.sh
source "$SCRIPT_DIR/kafka-security.sh"
ksec_check_mode

# ---------------------------------------------------------------- helpers
find_cmd() { # prints the first of the given commands found (also in sbin)
    local c d
    for c in "$@"; do
        if command -v "$c" >/dev/null 2>&1; then command -v "$c"; return 0; fi
        for d in /usr/sbin /sbin /usr/local/sbin; do
            if [[ -x $d/$c ]]; then printf '%s\n' "$d/$c"; return 0; fi
        done
    done
    return 1
}

need_cmd() { # var-name description candidates...
    local var=$1 what=$2 path
    shift 2
    path=$(find_cmd "$@") || die "$what not found (tried: $*); run deploy/local/deps.sh --stack"
    printf -v "$var" '%s' "$path"
}

port_open() { # port: true when something accepts TCP connections on 127.0.0.1:port
    # shellcheck disable=SC2016 # $0 is expanded by the inner bash
    timeout 2 bash -c 'exec 3<>"/dev/tcp/127.0.0.1/$0"' "$1" >/dev/null 2>&1
}

port_owner() { # port: best-effort description of the listener
    if command -v ss >/dev/null 2>&1; then
        ss -Hltnp "sport = :$1" 2>/dev/null | head -n 1 | tr -s ' ' || true
    fi
}

ensure_port_free() { # port what
    if port_open "$1"; then
        local owner
        owner=$(port_owner "$1")
        [[ -z $owner ]] || log "listening on port $1: $owner"
        die "port $1 ($2) on 127.0.0.1 is already in use by another process; choose another port (see --help) or stop that process"
    fi
}

proc_pid() { # pidfile needle: print pid if alive and its command line contains needle
    local pidfile=$1 needle=$2 pid cmd
    [[ -r $pidfile ]] || return 1
    pid=$(cat "$pidfile" 2>/dev/null) || return 1
    pid=${pid//[[:space:]]/}
    [[ $pid =~ ^[0-9]+$ ]] || return 1
    cmd=$(tr '\0' ' ' 2>/dev/null <"/proc/$pid/cmdline") || return 1
    [[ $cmd == *"$needle"* ]] || return 1
    printf '%s\n' "$pid"
}

kafka_pid() { proc_pid "$KAFKA_PIDFILE" "kafka.Kafka $KAFKA_PROPS"; }
mysql_pid() { proc_pid "$MYSQL_PIDFILE" "--datadir=$MYSQL_DATA"; }

# launch pidfile outfile needle cmd...: start cmd detached (own session, no
# tty, stdin from /dev/null, output appended to outfile, lock fd closed), then
# wait until the child has exec'd the command (its command line contains
# needle) so that later liveness checks cannot see the forked shell instead.
launch() {
    local pidfile=$1 out=$2 needle=$3 pid deadline stat
    shift 3
    rm -f "$pidfile"
    setsid nohup "$@" </dev/null >>"$out" 2>&1 9>&- &
    pid=$!
    disown "$pid" 2>/dev/null || true # no "Killed" job notices from this shell
    printf '%s\n' "$pid" >"$pidfile"
    deadline=$((SECONDS + 10))
    until proc_pid "$pidfile" "$needle" >/dev/null; do
        stat=$(cat "/proc/$pid/stat" 2>/dev/null) || return 0 # died: callers report it
        stat=${stat##*) }
        [[ ${stat:0:1} != Z ]] || return 0
        ((SECONDS < deadline)) || return 0
        sleep 0.02
    done
}

# pid_exited pid needle: true once the process is gone or a zombie whose
# threads have all exited. A dying multi-threaded process (JVM, mariadbd) can
# have a zombie main thread while other threads still hold its sockets.
pid_exited() {
    local stat state cmd tasks
    stat=$(cat "/proc/$1/stat" 2>/dev/null) || return 0
    state=${stat##*) }
    if [[ ${state:0:1} == Z ]]; then
        tasks=(/proc/"$1"/task/*)
        ((${#tasks[@]} <= 1)) && return 0
        return 1
    fi
    cmd=$(tr '\0' ' ' <"/proc/$1/cmdline" 2>/dev/null) || return 0
    [[ -n $cmd && $cmd != *"$2"* ]] # pid reused by an unrelated process
}

# stop_proc name pid needle hard ports...: SIGTERM (or SIGKILL if hard=1), wait
# for the exit with a deadline, SIGKILL as the last resort; then wait until the
# ports are closed (a killed JVM's main thread turns zombie before the other
# threads have released the sockets).
stop_proc() {
    local name=$1 pid=$2 needle=$3 hard=$4 deadline port
    shift 4
    if ((hard)); then
        log "killing $name (pid $pid, SIGKILL)"
        kill -KILL "$pid" 2>/dev/null || true
    else
        log "stopping $name (pid $pid, SIGTERM)"
        kill -TERM "$pid" 2>/dev/null || true
    fi
    deadline=$((SECONDS + STOP_TIMEOUT))
    until pid_exited "$pid" "$needle"; do
        if ((SECONDS >= deadline)); then
            if ((hard)); then die "$name (pid $pid) did not exit after SIGKILL"; fi
            log "$name did not exit within ${STOP_TIMEOUT}s; sending SIGKILL"
            kill -KILL "$pid" 2>/dev/null || true
            hard=1
            deadline=$((SECONDS + 10))
        fi
        sleep "$POLL"
    done
    deadline=$((SECONDS + 15))
    for port in "$@"; do
        while port_open "$port"; do
            if ((SECONDS >= deadline)); then
                log "warning: port $port still accepts connections after $name exited"
                break
            fi
            sleep 0.1
        done
    done
    log "$name stopped"
}

show_log_tail() { # file...
    local f
    for f in "$@"; do
        [[ -s $f ]] || continue
        printf -- '----- last lines of %s -----\n' "$f" >&2
        tail -n 40 "$f" >&2
    done
    printf -- '-----\n' >&2
}

init_stack_dir() {
    if [[ -d $STACK_DIR && ! -e $MARKER ]] && [[ -n $(ls -A "$STACK_DIR") ]]; then
        die "$STACK_DIR exists, is not empty and is not a kdelay stack directory; refusing to use it"
    fi
    mkdir -p "$STACK_DIR"
    : >"$MARKER"
}

take_lock() {
    exec 9>"$STACK_DIR/.lock"
    flock -w 300 9 || die "another stack.sh is working on $STACK_DIR (lock $STACK_DIR/.lock)"
}

save_conf() {
    local tmp=$CONF.tmp old_umask
    old_umask=$(umask)
    umask 077 # the external URL may contain a password
    {
        printf '# written by stack.sh; settings of the last start\n'
        printf 'SAVED_KAFKA_PORT=%q\n' "$KAFKA_PORT"
        printf 'SAVED_KAFKA_VERSION=%q\n' "$(kafka_version)"
        printf 'SAVED_KAFKA_NODES=%q\n' "$KAFKA_NODES"
        printf 'SAVED_MYSQL_PORT=%q\n' "$MYSQL_PORT"
        printf 'SAVED_MYSQL_URL_EXTERNAL=%q\n' "$MYSQL_URL_EXTERNAL"
        printf 'SAVED_MYSQL_TLS=%q\n' "$MYSQL_TLS"
        printf 'SAVED_MYSQL_GENERAL_LOG=%q\n' "$MYSQL_GENERAL_LOG"
        printf 'SAVED_KAFKA_SECURITY=%q\n' "$KAFKA_SECURITY"
    } >"$tmp"
    umask "$old_umask"
    mv -f "$tmp" "$CONF"
}

# ---------------------------------------------------------------- Kafka
kafka_version() {
    if [[ -n $KAFKA_VERSION ]]; then
        printf '%s\n' "$KAFKA_VERSION"
        return
    fi
    [[ -f $POM ]] || die "missing $POM"
    sed -n 's:.*<kafka.version>\([^<]*\)</kafka.version>.*:\1:p' "$POM" | head -n 1
}

kafka_major() { # 3 or 4 ...
    local v
    v=$(kafka_version)
    printf '%s\n' "${v%%.*}"
}

KCAT=""
find_kcat() {
    [[ -n $KCAT ]] || need_cmd KCAT "kcat (package kafkacat)" kcat kafkacat
}

# kafka_answers [ADDR]: a metadata request to ADDR (default: every node) is
# answered with at least one broker, and with all KAFKA_NODES of them when
# there are several.
kafka_answers() {
    local out
    find_kcat
    local -a sec
    mapfile -t sec < <(ksec_kcat_args)
    out=$("$KCAT" "${sec[@]}" -L -b "${1:-$BROKERS}" -m 2 2>/dev/null) || return 1
    [[ $out =~ [[:space:]]([1-9][0-9]*)\ brokers: ]] || return 1
    ((BASH_REMATCH[1] >= KAFKA_NODES))
}

# kafka_not_in_isr ADDR ID: prints how many partitions replicate on broker ID
# without ID in their ISR (metadata from ADDR); fails when ADDR does not answer.
kafka_not_in_isr() {
    local out
    find_kcat
    local -a sec
    mapfile -t sec < <(ksec_kcat_args)
    out=$("$KCAT" "${sec[@]}" -L -b "$1" -m 2 2>/dev/null) || return 1
    # lines like "    partition 0, leader 1, replicas: 1,2,3, isrs: 1,2,3"
    awk -v id="$2" '
        / replicas: / {
            r = $0; sub(/.* replicas: /, "", r); sub(/, isrs:.*/, "", r)
            i = $0; sub(/.* isrs: /, "", i); sub(/[^0-9,].*/, "", i); sub(/,$/, "", i)
            if (("," r ",") ~ ("," id ",") && ("," i ",") !~ ("," id ",")) n++
        }
        END { print n + 0 }' <<<"$out"
}

ensure_kafka_jars() {
    local version stamp want
    version=$(kafka_version)
    [[ -n $version ]] || die "cannot read <kafka.version> from $POM"
    KAFKA_LIBS=$REPO_ROOT/.cache/kafka-$version/libs
    stamp=$KAFKA_LIBS/.kdelay-complete
    want=$({ cat "$POM"; printf '%s\n' "$version"; } | sha256sum)
    want=${want%% *}
    if [[ -f $stamp && $(<"$stamp") == "$want" && -f $KAFKA_LIBS/kafka_2.13-$version.jar ]]; then
        return 0
    fi
    need_cmd MVN "Maven (package maven)" mvn
    mkdir -p "$REPO_ROOT/.cache"
    # serialise concurrent downloads (several stack dirs share the cache)
    exec 8>"$REPO_ROOT/.cache/kafka-$version.lock"
    flock -w 900 8 || die "timed out waiting for another Maven download (lock $REPO_ROOT/.cache/kafka-$version.lock)"
    if [[ ! -f $stamp || $(<"$stamp") != "$want" || ! -f $KAFKA_LIBS/kafka_2.13-$version.jar ]]; then
        # the pom changed since the last download: start from a clean directory
        if [[ -f $stamp ]]; then rm -rf "$KAFKA_LIBS"; fi
        log "fetching Apache Kafka $version with Maven into $KAFKA_LIBS (uses ~/.m2; slow only the first time) ..."
        local out
        out=$(mktemp)
        local -a mvn_props=("-Dkafka.version=$version")
        (($(kafka_major) < 4)) || mvn_props+=(-Dkafka4)
        if ! "$MVN" -q -B -f "$POM" "${mvn_props[@]}" dependency:copy-dependencies >"$out" 2>&1 8>&- 9>&-; then
            tail -n 40 "$out" >&2
            rm -f "$out"
            die "Maven could not fetch Kafka (see output above)"
        fi
        rm -f "$out"
        [[ -f $KAFKA_LIBS/kafka_2.13-$version.jar ]] || die "Maven succeeded but $KAFKA_LIBS/kafka_2.13-$version.jar is missing"
        printf '%s\n' "$want" >"$stamp"
        log "Kafka jars ready"
    fi
    exec 8>&-
}

# Every node replicates every partition: replication factor KAFKA_NODES, and
# with several nodes a write needs two of them (acks=all).
KAFKA_RF=$KAFKA_NODES
KAFKA_MIN_ISR=$((KAFKA_NODES > 1 ? 2 : 1))

kafka_voters() { # controller.quorum.voters: every node (static KRaft quorum)
    local i v=""
    for ((i = 0; i < KAFKA_NODES; i++)); do
        v+=${v:+,}$((i + 1))@127.0.0.1:$((KAFKA_PORT + 2 * i + 1))
    done
    printf '%s\n' "$v"
}

write_kafka_config() {
    mkdir -p "$KAFKA_DIR" "$KAFKA_DATA"
    cat >"$KAFKA_PROPS" <<EOF
# Generated by deploy/local/stack.sh on every start; edits are overwritten.
process.roles=broker,controller
node.id=$NODE_ID
controller.quorum.voters=$(kafka_voters)
listeners=PLAINTEXT://127.0.0.1:$NODE_PORT,CONTROLLER://127.0.0.1:$NODE_CTRL_PORT
advertised.listeners=PLAINTEXT://127.0.0.1:$NODE_PORT
controller.listener.names=CONTROLLER
inter.broker.listener.name=PLAINTEXT
listener.security.protocol.map=PLAINTEXT:PLAINTEXT,CONTROLLER:PLAINTEXT
log.dirs=$KAFKA_DATA
num.partitions=1
default.replication.factor=$KAFKA_RF
min.insync.replicas=$KAFKA_MIN_ISR
# kdelay creates its own topics; tests must create theirs explicitly
auto.create.topics.enable=false
delete.topic.enable=true
offsets.topic.replication.factor=$KAFKA_RF
offsets.topic.num.partitions=4
transaction.state.log.replication.factor=$KAFKA_RF
transaction.state.log.min.isr=$KAFKA_MIN_ISR
transaction.state.log.num.partitions=4
group.initial.rebalance.delay.ms=0
# After a crash (kill -9) the restarted broker can only register once the
# session of its previous incarnation expired (default 9 s): keep it short.
broker.session.timeout.ms=4000
broker.heartbeat.interval.ms=1000
log.retention.hours=168
log.retention.check.interval.ms=60000
log.segment.bytes=268435456
# small heap (-Xmx512m): keep the log cleaner buffer small
log.cleaner.dedupe.buffer.size=16777216
EOF
    ksec_broker_props >>"$KAFKA_PROPS"
    chmod 600 "$KAFKA_PROPS" # secured: the broker's SCRAM password

    write_log4j_tools
    write_log4j2_broker

    cat >"$LOG4J_PROPS" <<EOF
# Generated by deploy/local/stack.sh; used by the Kafka broker.
log4j.rootLogger=INFO, file
log4j.appender.file=org.apache.log4j.RollingFileAppender
log4j.appender.file.File=$KAFKA_LOG
log4j.appender.file.Append=true
log4j.appender.file.MaxFileSize=64MB
log4j.appender.file.MaxBackupIndex=2
log4j.appender.file.layout=org.apache.log4j.PatternLayout
log4j.appender.file.layout.ConversionPattern=[%d] %p %m (%c)%n

# noisy packages
log4j.logger.kafka.request.logger=WARN
log4j.logger.kafka.network.RequestChannel\$=WARN
log4j.logger.kafka.authorizer.logger=WARN
log4j.logger.state.change.logger=WARN
log4j.logger.kafka.log.LogCleaner=WARN
log4j.logger.kafka.log=WARN
log4j.logger.kafka.cluster.Partition=WARN
log4j.logger.kafka.server.ReplicaFetcherManager=WARN
log4j.logger.kafka.server.ReplicaAlterLogDirsManager=WARN
log4j.logger.org.apache.kafka.storage.internals.log=WARN
log4j.logger.org.apache.kafka.clients=WARN
log4j.logger.org.apache.kafka.common.utils.AppInfoParser=WARN
log4j.logger.org.apache.kafka.common.config.AbstractConfig=WARN
log4j.logger.org.apache.kafka.image=WARN
EOF
}

# The JVM option naming the log configuration of `what` (broker or
# tools): log4j 1 (reload4j) for Kafka 3.x, log4j2 for 4.x.
log4j_opt() {
    local v1=$LOG4J_TOOLS_PROPS v2=$LOG4J2_TOOLS_PROPS
    if [[ $1 == broker ]]; then
        v1=$LOG4J_PROPS
        v2=$LOG4J2_PROPS
    fi
    if (($(kafka_major) >= 4)); then
        printf -- '-Dlog4j2.configurationFile=file:%s\n' "$v2"
    else
        printf -- '-Dlog4j.configuration=file:%s\n' "$v1"
    fi
}

write_log4j_tools() { # warnings of the command-line tools to stderr
    mkdir -p "$KAFKA_ROOT"
    cat >"$LOG4J_TOOLS_PROPS" <<'EOF'
# Generated by deploy/local/stack.sh; used by kafka.tools.StorageTool.
log4j.rootLogger=WARN, stderr
log4j.appender.stderr=org.apache.log4j.ConsoleAppender
log4j.appender.stderr.Target=System.err
log4j.appender.stderr.layout=org.apache.log4j.PatternLayout
log4j.appender.stderr.layout.ConversionPattern=[%d] %p %m (%c)%n
EOF
    cat >"$LOG4J2_TOOLS_PROPS" <<'EOF'
# Generated by deploy/local/stack.sh; the tools' log4j2 (Kafka 4.x).
status = warn
appender.err.type = Console
appender.err.name = err
appender.err.target = SYSTEM_ERR
appender.err.layout.type = PatternLayout
appender.err.layout.pattern = [%d] %p %m (%c)%n
rootLogger.level = warn
rootLogger.appenderRef.err.ref = err
EOF
}

write_log4j2_broker() { # the broker's log4j2 (Kafka 4.x): as log4j.properties
    cat >"$LOG4J2_PROPS" <<EOF
# Generated by deploy/local/stack.sh; used by the Kafka 4.x broker.
status = warn
appender.file.type = RollingFile
appender.file.name = file
appender.file.fileName = $KAFKA_LOG
appender.file.filePattern = $KAFKA_LOG.%i
appender.file.layout.type = PatternLayout
appender.file.layout.pattern = [%d] %p %m (%c)%n
appender.file.policies.type = Policies
appender.file.policies.size.type = SizeBasedTriggeringPolicy
appender.file.policies.size.size = 64MB
appender.file.strategy.type = DefaultRolloverStrategy
appender.file.strategy.max = 2
rootLogger.level = info
rootLogger.appenderRef.file.ref = file
EOF
    local i=0 name
    for name in kafka.request.logger 'kafka.network.RequestChannel$' \
        kafka.authorizer.logger state.change.logger kafka.log.LogCleaner \
        kafka.log kafka.cluster.Partition kafka.server.ReplicaFetcherManager \
        kafka.server.ReplicaAlterLogDirsManager \
        org.apache.kafka.storage.internals.log org.apache.kafka.clients \
        org.apache.kafka.common.utils.AppInfoParser \
        org.apache.kafka.common.config.AbstractConfig org.apache.kafka.image; do
        i=$((i + 1))
        printf 'logger.q%d.name = %s\nlogger.q%d.level = warn\n' "$i" "$name" "$i" >>"$LOG4J2_PROPS"
    done
}

gen_cluster_id() { # 16 random bytes, URL-safe base64 without padding (Kafka Uuid format)
    local id
    while :; do
        id=$(head -c 16 /dev/urandom | base64 | tr '+/' '-_' | tr -d '=\n')
        [[ ${#id} -eq 22 && $id != -* && $id != AAAAAAAAAAAAAAAAAAAAA[AQ] ]] && break
    done
    printf '%s\n' "$id"
}

JAVA=""
kafka_prepare() {
    need_cmd JAVA "java (package openjdk-17-jre-headless)" "${JAVA_HOME:+$JAVA_HOME/bin/}java"
    find_kcat
    ensure_kafka_jars
    ksec_make
    write_kafka_config
    local have_version
    if [[ -f $KAFKA_DATA/meta.properties && -f $KAFKA_DATA/.kdelay-kafka-version ]]; then
        have_version=$(<"$KAFKA_DATA/.kdelay-kafka-version")
        [[ $have_version == "$(kafka_version)" ]] ||
            die "$KAFKA_DATA holds the data of Kafka $have_version, not $(kafka_version): 'stack.sh down --purge' first, or use another --stack-dir"
    fi
    if [[ ! -f $KAFKA_DATA/meta.properties ]]; then
        local id
        local -a scram
        mapfile -t scram < <(ksec_format_args)
        if ((KAFKA_NODES == 1)); then
            id=$(gen_cluster_id)
        else # the nodes of one cluster share its id
            [[ -s $KAFKA_ROOT/cluster.id ]] || gen_cluster_id >"$KAFKA_ROOT/cluster.id"
            id=$(<"$KAFKA_ROOT/cluster.id")
        fi
        log "formatting $NODE_NAME storage in $KAFKA_DATA (cluster id $id)"
        if ! "$JAVA" -cp "$KAFKA_LIBS/*" "$(log4j_opt tools)" \
            kafka.tools.StorageTool format -t "$id" -c "$KAFKA_PROPS" "${scram[@]}" >"$KAFKA_DIR/format.log" 2>&1; then
            show_log_tail "$KAFKA_DIR/format.log" "$KAFKA_LOG"
            die "formatting Kafka storage failed"
        fi
        kafka_version >"$KAFKA_DATA/.kdelay-kafka-version"
        ksec_formatted
    fi
}

# kafka_launch: start the selected node if needed, do not wait. Returns 0 if
# it is (being) started, sets KAFKA_LAUNCHED[node]=1 if we started it now.
declare -a KAFKA_LAUNCHED=()
kafka_launch() {
    local pid
    if pid=$(kafka_pid); then
        log "$NODE_NAME already running (pid $pid)"
        return 0
    fi
    ensure_port_free "$NODE_PORT" "$NODE_NAME"
    ensure_port_free "$NODE_CTRL_PORT" "$NODE_NAME controller"
    kafka_prepare
    local -a jvm_opts=(-Xms256m -Xmx512m -XX:+UseG1GC -XX:MaxGCPauseMillis=20
        -XX:+ExitOnOutOfMemoryError -Djava.awt.headless=true
        "$(log4j_opt broker)")
    if [[ -n ${KDELAY_KAFKA_JAVA_OPTS:-} ]]; then
        local -a extra
        read -r -a extra <<<"$KDELAY_KAFKA_JAVA_OPTS"
        jvm_opts+=("${extra[@]}")
    fi
    if ((KAFKA_NODES == 1)); then
        log "starting Kafka on $BROKERS (controller 127.0.0.1:$CONTROLLER_PORT)"
    else
        log "starting $NODE_NAME (node.id $NODE_ID) on $NODE_ADDR (controller 127.0.0.1:$NODE_CTRL_PORT)"
    fi
    printf '\n===== %s starting kafka =====\n' "$(date '+%F %T')" >>"$KAFKA_STDOUT"
    launch "$KAFKA_PIDFILE" "$KAFKA_STDOUT" "kafka.Kafka $KAFKA_PROPS" "$JAVA" "${jvm_opts[@]}" -cp "$KAFKA_LIBS/*" kafka.Kafka "$KAFKA_PROPS"
    KAFKA_LAUNCHED[NODE]=1
}

# kafka_wait NODE...: waits until each node answers a metadata request (on
# its own port) that lists every node; one deadline for all of them. A node
# we launched that does not answer in time is killed.
kafka_wait() {
    local deadline=$((SECONDS + KAFKA_READY_TIMEOUT)) pid n
    for n in "$@"; do
        select_node "$n"
        while :; do
            if ! pid=$(kafka_pid); then
                show_log_tail "$KAFKA_STDOUT" "$KAFKA_LOG"
                die "$NODE_NAME is not running (exited during startup?); logs: $KAFKA_LOG $KAFKA_STDOUT"
            fi
            if port_open "$NODE_PORT" && kafka_answers "$NODE_ADDR"; then
                if ((KAFKA_NODES == 1)); then
                    log "Kafka is up on $BROKERS (pid $pid)"
                else
                    log "$NODE_NAME is up on $NODE_ADDR (pid $pid), the cluster lists $KAFKA_NODES brokers"
                fi
                break
            fi
            if ((SECONDS >= deadline)); then
                show_log_tail "$KAFKA_STDOUT" "$KAFKA_LOG"
                if ((${KAFKA_LAUNCHED[NODE]:-0})); then
                    stop_proc "$NODE_NAME" "$pid" "kafka.Kafka $KAFKA_PROPS" 1 "$NODE_PORT" "$NODE_CTRL_PORT"
                    rm -f "$KAFKA_PIDFILE"
                    die "$NODE_NAME did not answer on $NODE_ADDR within ${KAFKA_READY_TIMEOUT}s; killed it"
                fi
                die "$NODE_NAME (pid $pid) does not answer on $NODE_ADDR within ${KAFKA_READY_TIMEOUT}s (started with another port? try 'stack.sh down' first)"
            fi
            sleep "$POLL"
        done
    done
}

# kafka_wait_isr: waits until the selected node is in the ISR of every
# partition it replicates (metadata from the node itself).
kafka_wait_isr() {
    local deadline=$((SECONDS + KAFKA_READY_TIMEOUT)) missing
    while :; do
        if missing=$(kafka_not_in_isr "$NODE_ADDR" "$NODE_ID") && ((missing == 0)); then
            log "$NODE_NAME (node.id $NODE_ID) is in the ISR of every partition it replicates"
            return 0
        fi
        ((SECONDS < deadline)) ||
            die "$NODE_NAME (node.id $NODE_ID) is not in the ISR of ${missing:-?} partitions after ${KAFKA_READY_TIMEOUT}s"
        sleep "$POLL"
    done
}

kafka_stop() { # the selected node
    local pid
    if ! pid=$(kafka_pid); then
        log "$NODE_NAME is not running"
        rm -f "$KAFKA_PIDFILE"
        return 0
    fi
    stop_proc "$NODE_NAME" "$pid" "kafka.Kafka $KAFKA_PROPS" "$opt_kill" "$NODE_PORT" "$NODE_CTRL_PORT"
    rm -f "$KAFKA_PIDFILE"
}

all_nodes() { # 0 .. KAFKA_NODES-1
    local i
    for ((i = 0; i < KAFKA_NODES; i++)); do printf '%s\n' "$i"; done
}

kafka_launch_all() {
    local n
    for n in $(all_nodes); do select_node "$n"; kafka_launch; done
}

# kafka_stop_all: every node. Several nodes get their signal at once: one
# stopped after the others could not finish its controlled shutdown without
# a controller quorum, and would wait for its SIGKILL.
kafka_stop_all() {
    local n
    local -a pids=()
    if ((KAFKA_NODES == 1)); then
        kafka_stop
        return
    fi
    for n in $(all_nodes); do
        select_node "$n"
        if pids[n]=$(kafka_pid); then
            kill "-$( ((opt_kill)) && echo KILL || echo TERM)" "${pids[n]}" 2>/dev/null || true
        fi
    done
    for n in $(all_nodes); do
        select_node "$n"
        if [[ -n ${pids[n]:-} ]]; then
            stop_proc "$NODE_NAME" "${pids[n]}" "kafka.Kafka $KAFKA_PROPS" "$opt_kill" "$NODE_PORT" "$NODE_CTRL_PORT"
        else
            log "$NODE_NAME is not running"
        fi
        rm -f "$KAFKA_PIDFILE"
    done
}

# kafka_layout: the node count of the Kafka data in the stack dir (empty when
# it has none): 1 for <stack-dir>/kafka/data, else its nodeI directories.
kafka_layout() {
    local d n=0
    if [[ -d $KAFKA_ROOT/data ]]; then
        printf '1\n'
        return
    fi
    for d in "$KAFKA_ROOT"/node*/data; do [[ -d $d ]] && n=$((n + 1)); done
    ((n == 0)) || printf '%s\n' "$n"
}

# check_layout: refuses a stack dir whose Kafka data is of another node count.
check_layout() {
    local have
    have=$(kafka_layout)
    [[ -z $have || $have == "$KAFKA_NODES" ]] ||
        die "$STACK_DIR holds the data of a $have-node Kafka, not $KAFKA_NODES: use --nodes $have, or 'stack.sh down --purge' first"
}

# ---------------------------------------------------------------- MySQL
MYSQL_CLIENT=""
MYSQL_ADMIN=""
find_mysql_clients() {
    [[ -n $MYSQL_CLIENT ]] || need_cmd MYSQL_CLIENT "mariadb client (package mariadb-client)" mariadb mysql
    [[ -n $MYSQL_ADMIN ]] || need_cmd MYSQL_ADMIN "mariadb-admin (package mariadb-client)" mariadb-admin mysqladmin
}

# TLS options of the clients over TCP: what the product uses with --mysql-tls on
mysql_tcp_tls_args() {
    [[ $MYSQL_TLS == on ]] && printf '%s\n' --ssl "--ssl-ca=$TLS_DIR/ca.pem" --ssl-verify-server-cert
    return 0
}

# private instance, over TCP (what the product and tests use)
mysql_answers() {
    find_mysql_clients
    local -a tls
    mapfile -t tls < <(mysql_tcp_tls_args)
    "$MYSQL_ADMIN" --no-defaults --protocol=tcp -h127.0.0.1 -P"$MYSQL_PORT" -uroot \
        "${tls[@]}" --connect-timeout=2 ping >/dev/null 2>&1
}

# A private CA and a server certificate for 127.0.0.1/localhost (once per
# stack dir), and a second, unrelated CA the tests use as a wrong one.
tls_make() {
    [[ -f $TLS_DIR/mysql-server.pem && -f $TLS_DIR/other-ca.pem ]] && return 0
    local openssl
    need_cmd openssl "openssl (package openssl)" openssl
    log "making a private CA and a MariaDB server certificate in $TLS_DIR"
    mkdir -p "$TLS_DIR"
    chmod 700 "$TLS_DIR"
    (
        cd "$TLS_DIR"
        umask 077
        "$openssl" req -x509 -newkey rsa:2048 -nodes -days 3650 -subj "/CN=kdelay stack CA" \
            -keyout ca.key -out ca.pem
        "$openssl" req -x509 -newkey rsa:2048 -nodes -days 3650 -subj "/CN=kdelay other CA" \
            -keyout other-ca.key -out other-ca.pem
        "$openssl" req -newkey rsa:2048 -nodes -subj "/CN=localhost" \
            -keyout mysql-server.key -out mysql-server.csr
        printf 'subjectAltName=IP:127.0.0.1,DNS:localhost\nbasicConstraints=CA:FALSE\n' >mysql-server.ext
        "$openssl" x509 -req -in mysql-server.csr -CA ca.pem -CAkey ca.key -CAcreateserial \
            -days 3650 -extfile mysql-server.ext -out mysql-server.pem
        chmod 644 ca.pem other-ca.pem mysql-server.pem
    ) >"$STACK_DIR/tls.log" 2>&1 || { show_log_tail "$STACK_DIR/tls.log"; die "openssl failed (log: $STACK_DIR/tls.log)"; }
}

mysql_socket_sql() { # sql
    "$MYSQL_CLIENT" --no-defaults --protocol=socket --socket="$MYSQL_SOCK" -uroot -e "$1"
}

mysql_init_sql() {
    local out
    if ! out=$(mysql_socket_sql "
CREATE USER IF NOT EXISTS 'root'@'127.0.0.1' IDENTIFIED BY '';
GRANT ALL PRIVILEGES ON *.* TO 'root'@'127.0.0.1' WITH GRANT OPTION;
CREATE DATABASE IF NOT EXISTS \`$MYSQL_DB\` CHARACTER SET utf8mb4 COLLATE utf8mb4_general_ci;" 2>&1); then
        printf '%s\n' "$out" >&2
        die "could not initialise the private MariaDB over $MYSQL_SOCK"
    fi
    local -a tls
    mapfile -t tls < <(mysql_tcp_tls_args)
    if ! out=$("$MYSQL_CLIENT" --no-defaults --protocol=tcp -h127.0.0.1 -P"$MYSQL_PORT" -uroot \
        "${tls[@]}" -e 'SELECT 1' "$MYSQL_DB" 2>&1); then
        printf '%s\n' "$out" >&2
        die "MariaDB answers, but root@127.0.0.1 cannot use database $MYSQL_DB over TCP"
    fi
}

MARIADBD=""
mysql_install() {
    local install_db
    need_cmd install_db "mariadb-install-db (package mariadb-server-core)" mariadb-install-db mysql_install_db
    log "initialising MariaDB data directory $MYSQL_DATA"
    # --user: as root the server must run as root (no chown to mysql needed,
    # the state dir stays owned by the caller); as a normal user it is ignored.
    # --tmpdir (passed on to the bootstrap server): a private one, because two
    # stacks initialised at once (scripts/test.sh) collided in the shared /tmp
    # ("Could not remove temporary table ... Unknown table mysql.tmp_user_sys").
    # One more try covers any other transient failure of the bootstrap.
    local try
    for try in 1 2; do
        rm -rf "$MYSQL_DATA" "$MYSQL_DIR/tmp"
        mkdir -p "$MYSQL_DATA" "$MYSQL_DIR/tmp"
        if "$install_db" --no-defaults --datadir="$MYSQL_DATA" \
            --auth-root-authentication-method=normal --skip-test-db \
            --user="$(id -un)" --tmpdir="$MYSQL_DIR/tmp" \
            >"$MYSQL_DIR/install.log" 2>&1 9>&-; then
            break
        fi
        show_log_tail "$MYSQL_DIR/install.log"
        if [ "$try" = 2 ]; then
            die "mariadb-install-db failed twice (log: $MYSQL_DIR/install.log)"
        fi
        log "mariadb-install-db failed; trying once more"
    done
    : >"$MYSQL_INSTALLED"
}

mysql_start_private() {
    local pid deadline
    if pid=$(mysql_pid); then
        log "MariaDB already running (pid $pid)"
    else
        need_cmd MARIADBD "mariadbd (package mariadb-server-core)" mariadbd mysqld
        find_mysql_clients
        # unix socket paths are limited to 107 bytes
        ((${#MYSQL_SOCK} <= 100)) || die "state dir path too long for the MariaDB socket ($MYSQL_SOCK); use a shorter KDELAY_STACK_DIR"
        ensure_port_free "$MYSQL_PORT" "MariaDB"
        mkdir -p "$MYSQL_DIR"
        [[ -f $MYSQL_INSTALLED ]] || mysql_install
        local -a args=(--no-defaults "--datadir=$MYSQL_DATA" "--port=$MYSQL_PORT"
            --bind-address=127.0.0.1 "--socket=$MYSQL_SOCK" "--pid-file=$MYSQL_SERVER_PIDFILE"
            "--log-error=$MYSQL_ERRLOG" --skip-name-resolve
            --innodb-buffer-pool-size=64M --innodb-log-file-size=16M
            --character-set-server=utf8mb4 --collation-server=utf8mb4_general_ci
            "--sql-mode=$MYSQL_SQL_MODE" "--tmpdir=$MYSQL_DIR")
        if [[ -n $MYSQL_GENERAL_LOG ]]; then
            args+=(--general-log=1 "--general-log-file=$MYSQL_GENERAL_LOG")
            log "MariaDB logs every statement to $MYSQL_GENERAL_LOG"
        fi
        if [[ $MYSQL_TLS == on ]]; then
            tls_make
            # TLS only over TCP; the unix socket (stack.sh's own admin SQL)
            # counts as secure transport.
            args+=("--ssl-ca=$TLS_DIR/ca.pem" "--ssl-cert=$TLS_DIR/mysql-server.pem"
                "--ssl-key=$TLS_DIR/mysql-server.key" --require-secure-transport=ON)
        fi
        # mariadbd refuses to run as root unless told to
        ((EUID != 0)) || args+=(--user=root)
        log "starting MariaDB on 127.0.0.1:$MYSQL_PORT"
        launch "$MYSQL_PIDFILE" "$MYSQL_DIR/stdout.log" "--datadir=$MYSQL_DATA" "$MARIADBD" "${args[@]}"
    fi
    deadline=$((SECONDS + MYSQL_READY_TIMEOUT))
    while :; do
        if ! pid=$(mysql_pid); then
            show_log_tail "$MYSQL_DIR/stdout.log" "$MYSQL_ERRLOG"
            die "MariaDB is not running (exited during startup?); log: $MYSQL_ERRLOG"
        fi
        if [[ -S $MYSQL_SOCK ]] && mysql_answers; then break; fi
        if ((SECONDS >= deadline)); then
            show_log_tail "$MYSQL_ERRLOG"
            die "MariaDB (pid $pid) does not answer on 127.0.0.1:$MYSQL_PORT within ${MYSQL_READY_TIMEOUT}s (started with another port? try 'stack.sh down' first)"
        fi
        sleep "$POLL"
    done
    mysql_init_sql
    log "MariaDB is up on 127.0.0.1:$MYSQL_PORT (pid $pid), database $MYSQL_DB"
}

mysql_stop() {
    local pid
    if [[ -n $MYSQL_URL_EXTERNAL ]]; then
        log "MySQL is external ($(redact_url "$MYSQL_URL_EXTERNAL")); not stopping it"
    fi
    if ! pid=$(mysql_pid); then
        [[ -n $MYSQL_URL_EXTERNAL ]] || log "MariaDB is not running"
        return 0
    fi
    stop_proc MariaDB "$pid" "--datadir=$MYSQL_DATA" "$opt_kill" "$MYSQL_PORT"
    rm -f "$MYSQL_PIDFILE"
}

# ---- external MySQL
redact_url() { # hide the password
    local u=$1
    if [[ $u =~ ^([a-z]+://[^:@/]*):[^@/]*@(.*)$ ]]; then
        u="${BASH_REMATCH[1]}:***@${BASH_REMATCH[2]}"
    fi
    printf '%s\n' "$u"
}

url_decode() { printf '%b' "${1//%/\\x}"; }

EXT_USER="" EXT_PASS="" EXT_HOST="" EXT_PORT="" EXT_DB=""
parse_mysql_url() {
    local re='^mysql://(([^:@/]*)(:([^@/]*))?@)?([^:/@?]+)(:([0-9]+))?(/([^?]*))?(\?.*)?$'
    [[ $1 =~ $re ]] || die "cannot parse MySQL URL '$(redact_url "$1")'; expected mysql://user[:password]@host[:port]/db"
    EXT_USER=$(url_decode "${BASH_REMATCH[2]}")
    EXT_PASS=$(url_decode "${BASH_REMATCH[4]}")
    EXT_HOST=${BASH_REMATCH[5]}
    EXT_PORT=${BASH_REMATCH[7]:-3306}
    EXT_DB=$(url_decode "${BASH_REMATCH[9]}")
    EXT_DB=${EXT_DB:-$MYSQL_DB}
}

ext_args() {
    EXT_ARGS=(--no-defaults --protocol=tcp "-h$EXT_HOST" "-P$EXT_PORT" --connect-timeout=5)
    [[ -z $EXT_USER ]] || EXT_ARGS+=("-u$EXT_USER")
}

mysql_external_answers() {
    parse_mysql_url "$MYSQL_URL_EXTERNAL"
    find_mysql_clients
    ext_args
    MYSQL_PWD=$EXT_PASS "$MYSQL_ADMIN" "${EXT_ARGS[@]}" ping >/dev/null 2>&1
}

mysql_start_external() {
    local shown out
    shown=$(redact_url "$MYSQL_URL_EXTERNAL")
    mysql_external_answers || die "external MySQL $shown does not answer"
    if ! out=$(MYSQL_PWD=$EXT_PASS "$MYSQL_CLIENT" "${EXT_ARGS[@]}" \
        -e "CREATE DATABASE IF NOT EXISTS \`$EXT_DB\` CHARACTER SET utf8mb4" 2>&1); then
        printf '%s\n' "$out" >&2
        die "cannot create database $EXT_DB on external MySQL $shown"
    fi
    log "using external MySQL $shown (database $EXT_DB exists)"
}

mysql_start() {
    if [[ -n $MYSQL_URL_EXTERNAL ]]; then mysql_start_external; else mysql_start_private; fi
}

mysql_url() {
    if [[ -n $MYSQL_URL_EXTERNAL ]]; then
        printf '%s\n' "$MYSQL_URL_EXTERNAL"
    else
        if [[ $MYSQL_TLS == on ]]; then
            printf 'mysql://root@127.0.0.1:%s/%s?ssl-mode=VERIFY_IDENTITY&ssl-ca=%s\n' \
                "$MYSQL_PORT" "$MYSQL_DB" "$TLS_DIR/ca.pem"
        else
            printf 'mysql://root@127.0.0.1:%s/%s\n' "$MYSQL_PORT" "$MYSQL_DB"
        fi
    fi
}

print_logs() {
    if ((KAFKA_NODES == 1)); then
        log "logs: Kafka  $KAFKA_LOG (JVM output: $KAFKA_STDOUT)"
    else
        log "logs: Kafka  $KAFKA_ROOT/node{0..$((KAFKA_NODES - 1))}/server.log (JVM output: stdout.log there)"
    fi
    if [[ -z $MYSQL_URL_EXTERNAL ]]; then
        log "      MariaDB $MYSQL_ERRLOG"
    fi
}

# ---------------------------------------------------------------- verbs
preflight_kafka() { # every node
    local n
    check_layout
    for n in $(all_nodes); do
        select_node "$n"
        if ! kafka_pid >/dev/null; then
            ensure_port_free "$NODE_PORT" "$NODE_NAME"
            ensure_port_free "$NODE_CTRL_PORT" "$NODE_NAME controller"
        fi
    done
}

preflight_mysql() {
    if [[ -n $MYSQL_URL_EXTERNAL ]]; then
        mysql_external_answers || die "external MySQL $(redact_url "$MYSQL_URL_EXTERNAL") does not answer"
    elif ! mysql_pid >/dev/null; then
        ensure_port_free "$MYSQL_PORT" "MariaDB"
    fi
}

cmd_up() {
    init_stack_dir
    take_lock
    # check all ports before starting anything
    preflight_kafka
    preflight_mysql
    save_conf
    # Kafka takes longest: launch it first, bring up MySQL meanwhile.
    kafka_launch_all
    mysql_start
    kafka_wait $(all_nodes)
    log "stack is up: KDELAY_BROKERS=$BROKERS KDELAY_MYSQL_URL=$(redact_url "$(mysql_url)")"
    print_logs
    log "for the tests: eval \"\$($SCRIPT_DIR/stack.sh env)\""
}

cmd_down() {
    if [[ ! -d $STACK_DIR ]]; then
        log "nothing to do: $STACK_DIR does not exist"
        return 0
    fi
    if [[ ! -e $MARKER ]]; then
        die "$STACK_DIR is not a kdelay stack directory (no $MARKER); refusing to touch it"
    fi
    take_lock
    # every node found, whatever --nodes says, so that nothing is left running
    KAFKA_NODES=$(kafka_layout)
    KAFKA_NODES=${KAFKA_NODES:-1}
    kafka_stop_all
    mysql_stop
    if ((opt_purge)); then
        log "deleting $STACK_DIR"
        rm -rf -- "$STACK_DIR"
    fi
    log "stack is down"
}

cmd_status() {
    local pid rc=0 n what=kafka
    for n in $(all_nodes); do
        select_node "$n"
        ((KAFKA_NODES == 1)) || what="kafka node $n"
        if pid=$(kafka_pid); then
            if port_open "$NODE_PORT" && kafka_answers "$NODE_ADDR"; then
                printf '%s: running (pid %s), answering on %s\n' "$what" "$pid" "$NODE_ADDR"
            else
                printf '%s: running (pid %s), NOT answering on %s\n' "$what" "$pid" "$NODE_ADDR"
                rc=3
            fi
        else
            printf '%s: stopped\n' "$what"
            rc=3
        fi
    done
    if [[ -n $MYSQL_URL_EXTERNAL ]]; then
        if mysql_external_answers; then
            printf 'mysql: external %s, answering\n' "$(redact_url "$MYSQL_URL_EXTERNAL")"
        else
            printf 'mysql: external %s, NOT answering\n' "$(redact_url "$MYSQL_URL_EXTERNAL")"
            rc=3
        fi
    elif pid=$(mysql_pid); then
        if mysql_answers; then
            printf 'mysql: running (pid %s), answering on 127.0.0.1:%s\n' "$pid" "$MYSQL_PORT"
        else
            printf 'mysql: running (pid %s), NOT answering on 127.0.0.1:%s\n' "$pid" "$MYSQL_PORT"
            rc=3
        fi
    else
        printf 'mysql: stopped\n'
        rc=3
    fi
    printf 'stack dir: %s\n' "$STACK_DIR"
    return "$rc"
}

# export NAME=value lines, each value quoted for the shell (printf %q),
# for eval "$(stack.sh env)": kdelayctl and kdelay-forwarder read
# KDELAY_BROKERS, KDELAY_MYSQL_URL and KDELAY_KAFKA_CONFIG themselves.
cmd_env() {
    printf 'export KDELAY_BROKERS=%q\n' "$BROKERS"
    printf 'export KDELAY_MYSQL_URL=%q\n' "$(mysql_url)"
    printf 'export KDELAY_STACK_DIR=%q\n' "$STACK_DIR"
    printf 'export KDELAY_KAFKA_VERSION=%q\n' "$(kafka_version)"
    printf 'export KDELAY_KAFKA_NODES=%q\n' "$KAFKA_NODES"
    if [[ -z $MYSQL_URL_EXTERNAL && $MYSQL_TLS == on ]]; then
        printf 'export KDELAY_MYSQL_CA=%q\n' "$TLS_DIR/ca.pem"
    fi
    ksec_env
}

cmd_topic() {
    [[ $opt_partitions =~ ^[1-9][0-9]*$ ]] || die "--partitions must be a positive integer"
    need_cmd JAVA "java (package openjdk-17-jre-headless)" "${JAVA_HOME:+$JAVA_HOME/bin/}java"
    ensure_kafka_jars
    write_log4j_tools
    local -a sec
    mapfile -t sec < <(ksec_java_args)
    "$JAVA" -cp "$KAFKA_LIBS/*" "$(log4j_opt tools)" \
        org.apache.kafka.tools.TopicCommand --bootstrap-server "$BROKERS" "${sec[@]}" \
        --create --if-not-exists --topic "$topic_name" \
        --partitions "$opt_partitions" --replication-factor "$KAFKA_RF" >&2 ||
        die "creating topic $topic_name failed"
    log "topic $topic_name exists ($BROKERS)"
}

node_arg() { # checks the node number I of node-start/node-stop and selects it
    ((KAFKA_NODES > 1)) || die "$verb needs a multi-node stack (--nodes 3)"
    ((topic_name < KAFKA_NODES)) || die "no Kafka node $topic_name (nodes 0..$((KAFKA_NODES - 1)))"
    select_node "$topic_name"
}

case $verb in
    down | mysql-* | kafka-jars) ;;
    *) check_layout ;;
esac

case $verb in
    topic) cmd_topic ;;
    acl) cmd_acl "${acl_args[@]}" ;;
    up) cmd_up ;;
    down) cmd_down ;;
    status) cmd_status || exit $? ;;
    env) cmd_env ;;
    kafka-jars) ensure_kafka_jars; printf '%s\n' "$KAFKA_LIBS" ;;
    kafka-start)
        init_stack_dir; take_lock; preflight_kafka; save_conf
        kafka_launch_all; kafka_wait $(all_nodes)
        ;;
    kafka-stop)
        [[ -d $STACK_DIR ]] || { log "Kafka is not running"; exit 0; }
        take_lock; kafka_stop_all
        ;;
    node-start)
        node_arg
        [[ -f $KAFKA_DATA/meta.properties ]] || die "$NODE_NAME has no data in $KAFKA_DATA: 'stack.sh up' first"
        take_lock
        if ! kafka_pid >/dev/null; then
            ensure_port_free "$NODE_PORT" "$NODE_NAME"
            ensure_port_free "$NODE_CTRL_PORT" "$NODE_NAME controller"
        fi
        kafka_launch; kafka_wait "$NODE"; kafka_wait_isr
        ;;
    node-stop)
        node_arg
        [[ -d $STACK_DIR ]] || { log "$NODE_NAME is not running"; exit 0; }
        take_lock; kafka_stop
        ;;
    mysql-start)
        [[ -z $MYSQL_URL_EXTERNAL ]] || die "MySQL is external ($(redact_url "$MYSQL_URL_EXTERNAL")); mysql-start only manages the private instance"
        init_stack_dir; take_lock; preflight_mysql; save_conf
        mysql_start_private
        ;;
    mysql-stop)
        [[ -z $MYSQL_URL_EXTERNAL ]] || die "MySQL is external ($(redact_url "$MYSQL_URL_EXTERNAL")); mysql-stop only manages the private instance"
        [[ -d $STACK_DIR ]] || { log "MariaDB is not running"; exit 0; }
        take_lock; mysql_stop
        ;;
    mysql-readonly)
        [[ -z $MYSQL_URL_EXTERNAL ]] || die "MySQL is external ($(redact_url "$MYSQL_URL_EXTERNAL")); mysql-readonly only manages the private instance"
        find_mysql_clients
        out=$(mysql_socket_sql "SET GLOBAL read_only = $([[ $topic_name == on ]] && echo ON || echo OFF)" 2>&1) ||
            { printf '%s\n' "$out" >&2; die "could not set read_only $topic_name"; }
        log "MariaDB read_only=$topic_name"
        ;;
    mysql-pause | mysql-resume)
        [[ -z $MYSQL_URL_EXTERNAL ]] || die "MySQL is external ($(redact_url "$MYSQL_URL_EXTERNAL")); $verb only manages the private instance"
        pid=$(mysql_pid) || die "MariaDB is not running"
        if [[ $verb == mysql-pause ]]; then
            kill -STOP "$pid" || die "cannot stop MariaDB (pid $pid)"
            log "MariaDB frozen (SIGSTOP, pid $pid); resume with: stack.sh mysql-resume"
        else
            kill -CONT "$pid" || die "cannot continue MariaDB (pid $pid)"
            log "MariaDB resumed (SIGCONT, pid $pid)"
        fi
        ;;
esac
