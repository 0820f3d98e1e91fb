#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# The rooms of src/lib/ go in one direction (docs/development.md#layout):
# a file of a room includes the kd_*.h headers of its own room and of the
# rooms before it in ROOMS, never of a room after it, and no header name
# is in two rooms. Files directly in src/lib/ are refused: each lives in
# the room of the audience that uses it. ctlonly/ and fwdonly/, each one
# binary's alone (kdelayctl's, the forwarder's) and not in libkdelay, come
# last and side by side: no room of the library includes either, and
# neither includes the other.
# Usage: check_lib_rooms.sh SRC_LIB_DIR
set -euo pipefail
dir=${1:?usage: check_lib_rooms.sh SRC_LIB_DIR}
cd "$dir"
LIB_ROOMS=(shared fate client) # libkdelay's, in their order
APART=(ctlonly fwdonly)        # after them, each apart from the other
ROOMS=("${LIB_ROOMS[@]}" "${APART[@]}")

declare -A room_of rank
for i in "${!ROOMS[@]}"; do
    r=${ROOMS[$i]}
    rank[$r]=$i
    # The rooms apart share one rank: neither is before the other.
    [ "$i" -lt "${#LIB_ROOMS[@]}" ] || rank[$r]=${#LIB_ROOMS[@]}
    for h in "$r"/kd_*.h; do
        [ -e "$h" ] || continue
        b=${h#"$r"/}
        if [ -n "${room_of[$b]:-}" ]; then
            echo "check_lib_rooms: $b is in ${room_of[$b]}/ and $r/" >&2
            exit 1
        fi
        room_of[$b]=$r
    done
done

bad=0
loose=$(find . -maxdepth 1 -type f \( -name '*.c' -o -name '*.h' \) | sort)
if [ -n "$loose" ]; then
    echo "check_lib_rooms: outside a room: ${loose//$'\n'/ }" >&2
    bad=1
fi
for d in */; do
    d=${d%/}
    if [ -z "${rank[$d]:-}" ]; then
        echo "check_lib_rooms: $d/ is not a room (${ROOMS[*]})" >&2
        bad=1
    fi
done
for r in "${ROOMS[@]}"; do
    for f in "$r"/*.c "$r"/*.h; do
        [ -e "$f" ] || continue
        while read -r h; do
            hr=${room_of[$h]:-}
            [ -n "$hr" ] || continue # not a header of src/lib
            if [ "${rank[$hr]}" -gt "${rank[$r]}" ]; then
                echo "check_lib_rooms: $f includes $hr/$h (a later room)" >&2
                bad=1
            elif [ "$hr" != "$r" ] && [ "${rank[$hr]}" = "${rank[$r]}" ]; then
                echo "check_lib_rooms: $f includes $hr/$h (a room apart)" >&2
                bad=1
            fi
        done < <(grep -o '^#include "kd_[a-z0-9_]*\.h"' "$f" | sed 's/.*"\(.*\)"/\1/')
    done
done
[ "$bad" = 0 ] || exit 1
for r in "${ROOMS[@]}"; do
    printf '%s/: %s\n' "$r" "$(cd "$r" && printf '%s\n' *.c | sed 's/\.c$//' | tr '\n' ' ')"
done
