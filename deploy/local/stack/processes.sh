# SPDX-License-Identifier: Apache-2.0
# shellcheck shell=bash disable=SC2034,SC2153,SC2154 # globals shared by the parts
# stack/processes.sh - sourced by deploy/local/stack.sh: ports on 127.0.0.1,
# and starting and stopping the servers as detached processes known by a
# pid file. Not a program of its own.

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
