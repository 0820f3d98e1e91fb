#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# The compiler keeps the forwarder's rooms (cmake/fwd_rooms.cmake): each
# room compiles on a view of src/fwd/ that shows only the rooms it may
# include (KD_FWD_SEES_<room>, CMakeLists.txt), which must be an order:
# no room sees itself or a room that sees it, and each sees what the rooms
# it sees see. Planted includes, each in a scratch file compiled as a file
# of a room would be (beside its own headers, on its view):
#  - of a header of every other room, spelled "ROOM/kd_X.h": it compiles
#    when the room sees that one, and is refused with a message that
#    names both rooms when it does not;
#  - of another room's header by bare name: refused ("include it as");
#  - a real file of a low room (store.c) with an include of the top's
#    header planted in it: refused, while the copy without it compiles;
#  - of a room's state header (kd_<room>_state.h) in every other room,
#    those above it too: refused ("own state");
#  - a read of a field of a room's state (FIELDS below) in every room,
#    after an include of every header that room may include: compiles in
#    its own room (with its state header), and in every other one is an
#    incomplete type (no header hands another room a state's type).
# Usage: check_fwd_rooms.sh SRC_FWD VIEWS CC ROOM=SEEN,SEEN... -- CFLAGS...
# (CFLAGS: the rooms' include dirs and definitions; those under VIEWS are
# dropped, each compile gets its room's view.)
set -euo pipefail
src=${1:?usage: check_fwd_rooms.sh SRC_FWD VIEWS CC ROOM=SEES... -- CFLAGS...}
views=${2:?}
cc=${3:?}
shift 3
declare -A sees
rooms=()
while [ $# -gt 0 ] && [ "$1" != -- ]; do
    rooms+=("${1%%=*}")
    sees[${1%%=*}]=",${1#*=},"
    shift
done
[ "${1:-}" = -- ] && shift
flags=()
for a in "$@"; do
    case $a in
    -I"$views"*) ;;
    -I | -D) ;; # an empty list's leftover
    *) flags+=("$a") ;;
    esac
done
# The table is an order: no room sees itself, nor a room that sees it,
# and a room sees what the rooms below it see (their headers include
# those).
for r in "${rooms[@]}"; do
    for x in "${rooms[@]}"; do
        [[ ${sees[$r]} == *",$x,"* ]] || continue
        if [ "$x" = "$r" ] || [[ ${sees[$x]} == *",$r,"* ]]; then
            echo "check_fwd_rooms: rooms $r and $x see each other: no order" >&2
            exit 1
        fi
        for y in $(echo "${sees[$x]}" | tr ',' ' '); do
            [[ ${sees[$r]} == *",$y,"* ]] || {
                echo "check_fwd_rooms: room $r sees $x but not $y, which $x sees" >&2
                exit 1
            }
        done
    done
done

tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT

fail=0
compile() { # ROOM FILE -> the compiler's answer in $tmp/out
    "$cc" -std=c11 -fsyntax-only -iquote "$src/$1" -I "$views/$1" \
        "${flags[@]}" "$2" >"$tmp/out" 2>&1
}
first_header() { find "$src/$1" -maxdepth 1 -name 'kd_*.h' -printf '%f\n' | sort | head -1; }

pairs=0 refused=0
for r in "${rooms[@]}"; do
    for x in "${rooms[@]}"; do
        [ "$x" = "$r" ] && continue
        h=$(first_header "$x")
        printf '#include "%s/%s"\n' "$x" "$h" >"$tmp/planted.c"
        pairs=$((pairs + 1))
        if [[ ${sees[$r]} == *",$x,"* ]]; then
            if ! compile "$r" "$tmp/planted.c"; then
                echo "check_fwd_rooms: room $r sees $x, but $x/$h does not compile in it:" >&2
                cat "$tmp/out" >&2
                fail=1
            fi
        elif compile "$r" "$tmp/planted.c"; then
            echo "check_fwd_rooms: room $r does not see $x, yet $x/$h compiles in it" >&2
            fail=1
        elif ! grep -q "room $r sees .*: $x/$h is in room $x" "$tmp/out"; then
            echo "check_fwd_rooms: $x/$h in room $r: refused without the rooms' message:" >&2
            cat "$tmp/out" >&2
            fail=1
        else
            refused=$((refused + 1))
        fi
        printf '#include "%s"\n' "$h" >"$tmp/planted.c"
        if compile "$r" "$tmp/planted.c" ||
            ! grep -q "is room $x's header: include it as" "$tmp/out"; then
            echo "check_fwd_rooms: $h by bare name in room $r was not refused so:" >&2
            cat "$tmp/out" >&2
            fail=1
        fi
    done
done
echo "check_fwd_rooms: $pairs planted includes of another room, $refused refused as the rooms' order says; each bare name refused"

# A real file: store.c, with the top's header planted after its first
# include (an include that runs back up).
sed '0,/^#include/{/^#include/a #include "top/kd_fwd.h"
}' "$src/store/store.c" >"$tmp/store.c"
grep -q '^#include "top/kd_fwd.h"' "$tmp/store.c" || {
    echo "check_fwd_rooms: could not plant the include in store.c" >&2
    exit 1
}
cp "$src/store/store.c" "$tmp/clean.c"
if ! compile store "$tmp/clean.c"; then
    echo "check_fwd_rooms: store.c's scratch copy does not compile as it is:" >&2
    cat "$tmp/out" >&2
    exit 1
fi
if compile store "$tmp/store.c"; then
    echo "check_fwd_rooms: store.c compiles with top/kd_fwd.h planted in it" >&2
    exit 1
fi
echo "check_fwd_rooms: store.c with top/kd_fwd.h planted, the compiler says:"
grep -m1 'room store sees' "$tmp/out"

# Each room's state is its own: its header is refused elsewhere, and a
# field read through its handle in struct kd_fwd does not compile there.
FIELDS=("store f->store->down" "producer f->producer->inflight"
    "pipeline f->claim->seq" "ops f->ops->watchdog_ms" "top f->top->http_failed")
everything() { # ROOM -> an #include of every header ROOM may include
    local own=$1 x h
    for h in $(find "$src/$own" -maxdepth 1 -name 'kd_*.h' -printf '%f\n' | sort); do
        printf '#include "%s"\n' "$h"
    done
    for x in $(echo "${sees[$own]}" | tr ',' ' '); do
        for h in $(find "$src/$x" -maxdepth 1 -name 'kd_*.h' ! -name 'kd_*_state.h' -printf '%f\n' | sort); do
            printf '#include "%s/%s"\n' "$x" "$h"
        done
    done
}
# Every room with a state header has a field probed.
for st in $(find "$src" -mindepth 2 -maxdepth 2 -name 'kd_*_state.h' | sort); do
    x=$(basename "$(dirname "$st")")
    printf '%s\n' "${FIELDS[@]}" | grep -q "^$x " || {
        echo "check_fwd_rooms: room $x has a state header and no field in FIELDS" >&2
        exit 1
    }
done
states=0 fields=0
for e in "${FIELDS[@]}"; do
    read -r x expr <<<"$e"
    st=$(find "$src/$x" -maxdepth 1 -name 'kd_*_state.h' -printf '%f\n')
    [ -n "$st" ] || {
        echo "check_fwd_rooms: room $x has no state header" >&2
        exit 1
    }
    for r in "${rooms[@]}"; do
        if [ "$r" = "$x" ]; then
            printf '#include "%s"\nlong planted(const kd_fwd_t *f) { return (long)%s; }\n' \
                "$st" "$expr" >"$tmp/planted.c"
            if ! compile "$r" "$tmp/planted.c"; then
                echo "check_fwd_rooms: $expr does not compile in its own room $x:" >&2
                cat "$tmp/out" >&2
                fail=1
            fi
            continue
        fi
        printf '#include "%s/%s"\n' "$x" "$st" >"$tmp/planted.c"
        if compile "$r" "$tmp/planted.c" ||
            ! grep -q "$x/$st is room $x's own state" "$tmp/out"; then
            echo "check_fwd_rooms: $x/$st in room $r was not refused so:" >&2
            cat "$tmp/out" >&2
            fail=1
        else
            states=$((states + 1))
        fi
        # Every header room r may include (its own by bare name, those
        # of the rooms it sees with the room; no other room's state
        # header), then the read: a header that leaked a state type
        # would complete it here.
        everything "$r" >"$tmp/planted.c"
        if ! compile "$r" "$tmp/planted.c"; then
            echo "check_fwd_rooms: the headers room $r may include do not compile together:" >&2
            cat "$tmp/out" >&2
            exit 1
        fi
        printf 'long planted(const kd_fwd_t *f) { return (long)%s; }\n' \
            "$expr" >>"$tmp/planted.c"
        if compile "$r" "$tmp/planted.c" ||
            [ "$(grep -c 'error:' "$tmp/out")" != \
                "$(grep -c 'error:.*incomplete' "$tmp/out")" ]; then
            echo "check_fwd_rooms: $expr in room $r was not refused as an incomplete type:" >&2
            cat "$tmp/out" >&2
            fail=1
        else
            fields=$((fields + 1))
        fi
    done
done
echo "check_fwd_rooms: $states state headers planted in another room, each refused; $fields fields of another room's state read after every header that room may include, each an incomplete type; the compiler says:"
printf '#include "core/kd_fwd_core.h"\nlong planted(const kd_fwd_t *f) { return (long)f->store->down; }\n' >"$tmp/planted.c"
compile ops "$tmp/planted.c" || true
grep -m1 'incomplete' "$tmp/out"
exit $fail
