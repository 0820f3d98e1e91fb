#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# The forwarder's pipeline has one direction: no module of src/fwd/
# includes the declarations of a module that (directly or not) includes
# its own, but where a stage hands work back upstream by a plain call
# (BACK below: the intake's room, a task to claim again, claims to
# resume), and only for those calls. Which room may include which is the
# compiler's (cmake/fwd_rooms.cmake, check_fwd_rooms). A module is X.c
# with kd_X.h; the fire stage's files by job (fire.c and fire_*.c,
# kd_fire.h and kd_fire_*.h: they call each other) are one module, the
# delivery modes (mode_*.c, kd_mode.h, kd_mode_ctx.h, and exactly_once's
# parts eos_*.c, kd_eos_*.h) another, the mode seam they implement
# (kd_mode_ops.h) another, the top (fwd.c, loop.c, main.c, kd_fwd.h)
# another, the producer room (producer*.c, kd_producer*.h, and the loop's
# turn and the nested pump that is its drain: loop_pump.c,
# kd_loop_pump.h) another. Also: only the mode files (mode_*.c, eos_*.c) name the
# exactly-once mode ("eos"); its parts (eos_*.c, kd_eos_*.h) know no
# forwarder (kd_fwd_t) nor mode context: they get what they need as
# arguments; and the mode files switch the compiler's seam on (they
# define KD_MODE_SEAM first). That a mode keeps to its own state and
# touches no other stage's (f->intake, f->claim, f->settle, ...,
# f->shutdown_deadline) is no longer checked here: a mode sees only its
# context (kd_mode_ops.h, kd_mode_ctx.h), and kd_fwd_core.h does not compile in a mode
# file, so the compiler refuses any f->... in it. Nor is it checked that a
# room keeps to its own state: another room's handles (f->claim, f->store,
# ...) are incomplete types outside it (kd_<room>_state.h is its own,
# cmake/fwd_rooms.cmake refuses it elsewhere).
# And the forwarder tells the time one way: no module but the timer
# service (timer.c, its clock source) reads the host's clocks.
# And the producer room owns the producers: no other file touches their
# state (f->kafka, f->producer->..., kd_producer_state.h) or polls,
# flushes, purges or produces on a producer itself.
# And a task's place (kd_task_where_t) has one writer, the lifecycle
# (lifecycle.c): no other file assigns a KD_WHERE_ place or a queue's.
# And every file lives in a room (a subfolder of src/fwd/ by role, the
# rooms below, none nested), each file name once, and docs/development.md's
# rooms table names every file of src/fwd/ in its room's row.
# Usage: check_fwd_layers.sh SRC_FWD_DIR
set -euo pipefail
dir=${1:?usage: check_fwd_layers.sh SRC_FWD_DIR}
cd "$dir"
ROOMS=(core pipeline modes producer store ops top)

# --- the rooms -----------------------------------------------------------
loose=$(find . -maxdepth 1 -type f | sort)
if [ -n "$loose" ]; then
    echo "check_fwd_layers: files outside a room of src/fwd: ${loose//$'\n'/ }" >&2
    exit 1
fi
for d in $(find . -mindepth 1 -maxdepth 1 -type d | sort); do
    case " ${ROOMS[*]} " in
    *" ${d#./} "*) ;;
    *)
        echo "check_fwd_layers: $d is not a room (${ROOMS[*]})" >&2
        exit 1
        ;;
    esac
done
dups=$(find . -type f -name '*.[ch]' -printf '%f\n' | sort | uniq -d)
if [ -n "$dups" ]; then
    echo "check_fwd_layers: file names in two rooms: ${dups//$'\n'/ }" >&2
    exit 1
fi
nested=$(find . -mindepth 2 -type d | sort)
if [ -n "$nested" ]; then
    echo "check_fwd_layers: folders inside a room: ${nested//$'\n'/ }" >&2
    exit 1
fi
# Each file named, in backquotes, in its own room's row of the rooms
# table of docs/development.md.
dev=../../docs/development.md
if [ ! -e "$dev" ]; then
    echo "check_fwd_layers: $dev is missing" >&2
    exit 1
fi
unnamed=""
for f in $(find . -type f -name '*.[ch]' | sort); do
    f=${f#./}
    grep -E "^\| \`${f%%/*}/\`" "$dev" | grep -qF "\`$f\`" ||
        unnamed="$unnamed $f"
done
if [ -n "$unnamed" ]; then
    echo "check_fwd_layers: docs/development.md's rooms table does not name these in their room's row:$unnamed" >&2
    exit 1
fi
echo "rooms: ${ROOMS[*]} ($(find . -type f -name '*.[ch]' | wc -l) files, each named in development.md)"

# From here on the rooms are one flat set of files: F holds their paths.
mapfile -t F < <(find . -type f -name '*.[ch]' | sort)
files_named() { # PATTERN... -> the paths of files whose names match
    local f p
    for f in "${F[@]}"; do
        for p in "$@"; do
            # shellcheck disable=SC2053
            [[ ${f##*/} == $p ]] && echo "$f" && break
        done
    done
    return 0
}
path_of() { files_named "$1" | head -1; }

module() { # file -> module name
    # The mode seam (the ops table and the context, which kd_fwd_core.h
    # embeds) is core's, under the stages; the modes implement it, and
    # kd_mode_ctx.h, the context's services (mode_ctx.c), is theirs.
    [ "$1" = kd_mode_ops.h ] && echo mode_ops && return
    # A room's front (its state made and freed, what other rooms read of
    # it as a whole) is over its stages; the pipeline's state header,
    # under them, is pipeline_state; the store's is the store's.
    [ "$1" = pipeline_state.c ] && echo pipeline && return
    [ "$1" = kd_store_state.h ] && echo store && return
    local b=${1%.*}
    b=${b#kd_}
    case $b in
    fire | fire_*) echo fire ;;
    mode | mode_* | eos_*) echo mode ;;
    fwd | loop | main) echo top ;;
    producer | producer_* | loop_pump) echo producer ;;
    *) echo "$b" ;;
    esac
}

# Which room a file may include is the compiler's (cmake/fwd_rooms.cmake,
# check_fwd_rooms): each room compiles on a view of src/fwd/ that holds
# only the rooms it sees. An include by a path of its own would get round
# it: none climbs out of its folder nor starts at the root.
around=$(grep -nE '^#include "(\.\.|/)' "${F[@]}" || true)
if [ -n "$around" ]; then
    echo "check_fwd_layers: an include around the rooms' views:" >&2
    printf '%s\n' "$around" >&2
    exit 1
fi

# The stages' calls back upstream: "MODULE UPSTREAM FUNCTION..." (each
# upstream stage's functions that MODULE may call; its include of the
# upstream header closes no circle).
BACK=("held intake kd_intake_room"
    "settle intake kd_intake_room"
    "fire claim kd_claim_enqueue kd_claim_holds"
    "outage claim kd_claim_resume")
back_edges=""
for b in "${BACK[@]}"; do
    read -r m d fns <<<"$b"
    back_edges="$back_edges|$m $d|"
    for f in $(files_named "$m.c"); do
        while read -r n; do
            case " $fns " in
            *" $n "*) ;;
            *)
                echo "check_fwd_layers: $f calls back upstream $n, not one of: $fns" >&2
                exit 1
                ;;
            esac
        done < <(grep -oE "\bkd_${d}_[a-z_]*" "$f" | sort -u)
    done
done

edges=$(for f in "${F[@]}"; do
    m=$(module "${f##*/}")
    grep -oE '^#include "([a-z]+/)?kd_[a-z_]*\.h"' "$f" |
        sed 's/.*"\(.*\)"/\1/; s#.*/##' |
        while read -r h; do
            [ -n "$(path_of "$h")" ] || continue # a library header
            d=$(module "$h")
            [ "$m" = "$d" ] || echo "$m $d"
        done
done | sort -u | while read -r m d; do
    case $back_edges in
    *"|$m $d|"*) ;; # a call back upstream (BACK)
    *) echo "$m $d" ;;
    esac
done)

if ! order=$(printf '%s\n' "$edges" | tsort 2>&1 >/dev/null) || [ -n "$order" ]; then
    echo "check_fwd_layers: include circle in src/fwd:" >&2
    printf '%s\n' "$order" >&2
    exit 1
fi
order=$(printf '%s\n' "$edges" | tsort | tr '\n' ' ')
echo "modules, each including only later ones: ${order% }"
echo "calls back upstream:" "${BACK[@]/%/;}"

mapfile -t c_files < <(files_named '*.c')
eos=$(grep -ln 'eos' "${c_files[@]}" | grep -vE '/(mode_|eos_)[a-z_]*\.c$' || true)
if [ -n "$eos" ]; then
    echo "check_fwd_layers: outside the mode files, these name eos: ${eos//$'\n'/ }" >&2
    exit 1
fi
echo "eos named only in: $(grep -ln eos "${c_files[@]}" | tr '\n' ' ')"

# The mode seam (kd_mode.h, kd_mode_ctx.h) is the compiler's: a mode file
# defines KD_MODE_SEAM before its first include, and kd_fwd_core.h then
# refuses to compile in it, so no mode can name kd_fwd_t's fields (nor
# another stage's state). This only checks the switch is on in each.
mapfile -t mode_files < <(files_named 'mode_*.c' 'eos_*.c' | grep -v '/mode_ctx\.c$')
for m in "${mode_files[@]}"; do
    first=$(grep -m1 -nE '^#(include|define KD_MODE_SEAM\b)' "$m" || true)
    case $first in
    *'#define KD_MODE_SEAM'*) ;;
    *)
        echo "check_fwd_layers: $m does not define KD_MODE_SEAM before its includes" >&2
        exit 1
        ;;
    esac
done
echo "the compiler keeps the forwarder out of: ${mode_files[*]}"

# exactly_once's parts (kd_eos_poison.h, kd_eos_offsets.h) take what they
# need as arguments, not even the mode context: the poison decisions are
# pure (test_eos_poison).
mapfile -t eos_parts < <(files_named 'eos_*.c' 'kd_eos_*.h')
fwd=$(grep -nE 'kd_fwd_t|kd_fwd_core\.h|kd_mode(_ctx|_ops)?\.h|kd_mode_ctx_t' "${eos_parts[@]}" || true)
if [ -n "$fwd" ]; then
    echo "check_fwd_layers: an exactly_once part knows the forwarder:" >&2
    printf '%s\n' "$fwd" >&2
    exit 1
fi
echo "exactly_once's parts know no forwarder: $(files_named 'eos_*.c' | tr '\n' ' ')"

# One clock (kd_timer.h's kd_clocksrc_t): every other file reads the time
# through the forwarder's (kd_fwd_mono_ms, kd_fwd_wall_ms, kd_timers_now).
real='\bkd_(mono|now)_ms\b|clock_gettime|gettimeofday|time\(NULL\)|CLOCK_(REALTIME|MONOTONIC)'
reads=$(grep -nE "$real" "${F[@]}" | grep -v '/timer\.c:' || true)
if [ -n "$reads" ]; then
    echo "check_fwd_layers: the host's clock read outside timer.c:" >&2
    printf '%s\n' "$reads" >&2
    exit 1
fi
echo "the host's clocks read only in timer.c ($(grep -cE "$real" "$(path_of timer.c)") reads)"

# The producer room (kd_producer.h): the producers' state is its own, and
# so are their polls (the reports), flushes, purges and produces.
room='\bf->kafka\b|->kafka\.|->producer->|kd_producer_state\.h|\brd_kafka_(poll|flush|purge|produce|producev|produceva)\('
touch=$(grep -nE "$room" "${F[@]}" | grep -vE '/(producer[a-z_]*\.c|kd_producer[a-z_]*\.h):' || true)
if [ -n "$touch" ]; then
    echo "check_fwd_layers: the producer room's state or producers touched outside it:" >&2
    printf '%s\n' "$touch" >&2
    exit 1
fi
echo "the producers touched only in the room: $(files_named 'producer*.c' | tr '\n' ' ')"

# A task's place (kd_lifecycle.h): written in lifecycle.c alone; the
# stages move it through the lifecycle's named moves and queues.
place='->where[[:space:]]*=[[:space:]]*(KD_WHERE_[A-Z_]+|[a-z_]+->where)[[:space:]]*;'
writes=$(grep -nE -e "$place" "${F[@]}" | grep -v '/lifecycle\.c:' || true)
if [ -n "$writes" ]; then
    echo "check_fwd_layers: a task's place written outside lifecycle.c (call its moves, kd_lifecycle.h):" >&2
    printf '%s\n' "$writes" >&2
    exit 1
fi
echo "a task's place written only in lifecycle.c ($(grep -cE '[a-z]->where = ' "$(path_of lifecycle.c)") writer)"
