# SPDX-License-Identifier: Apache-2.0
# shellcheck shell=bash disable=SC2034,SC2153,SC2154 # globals shared by the parts
# stack/common.sh - sourced by deploy/local/stack.sh: messages, finding commands,
# the stack directory's marker and lock. Not a program of its own.

log() { printf '%s: %s\n' "$PROG" "$*" >&2; }
die() { log "error: $*"; exit 1; }

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
