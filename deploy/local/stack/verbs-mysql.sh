# SPDX-License-Identifier: Apache-2.0
# shellcheck shell=bash disable=SC2034,SC2153,SC2154 # globals shared by the parts
# stack/verbs-mysql.sh - sourced by deploy/local/stack.sh: the verbs of the
# private MariaDB alone: mysql-start, mysql-stop, mysql-readonly, mysql-pause
# and mysql-resume. Not a program of its own.

need_private_mysql() { # the verb's MySQL is the private instance
    [[ -z $MYSQL_URL_EXTERNAL ]] || die "MySQL is external ($(redact_url "$MYSQL_URL_EXTERNAL")); $verb only manages the private instance"
}

cmd_mysql_start() {
    need_private_mysql
    init_stack_dir
    take_lock
    preflight_mysql
    save_conf
    mysql_start_private
}

cmd_mysql_stop() {
    need_private_mysql
    [[ -d $STACK_DIR ]] || { log "MariaDB is not running"; return 0; }
    take_lock
    mysql_stop
}

cmd_mysql_readonly() { # verb_arg: on or off
    local out
    need_private_mysql
    find_mysql_clients
    out=$(mysql_socket_sql "SET GLOBAL read_only = $([[ $verb_arg == on ]] && echo ON || echo OFF)" 2>&1) ||
        { printf '%s\n' "$out" >&2; die "could not set read_only $verb_arg"; }
    log "MariaDB read_only=$verb_arg"
}

cmd_mysql_pause_resume() { # mysql-pause: SIGSTOP, mysql-resume: SIGCONT
    local pid
    need_private_mysql
    pid=$(mysql_pid) || die "MariaDB is not running"
    if [[ $verb == mysql-pause ]]; then
        kill -STOP "$pid" || die "cannot stop MariaDB (pid $pid)"
        log "MariaDB frozen (SIGSTOP, pid $pid); resume with: stack.sh mysql-resume"
    else
        kill -CONT "$pid" || die "cannot continue MariaDB (pid $pid)"
        log "MariaDB resumed (SIGCONT, pid $pid)"
    fi
}
