#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# No two files of the library call each other in a circle, directly or
# round several (docs/development.md#layout): file A calls file B when A's
# object leaves a symbol undefined that B's defines. check_lib_rooms sees
# includes; a call needs none (a public kdelay_ function, a prototype
# written out), so this reads the built objects. Every archive given is
# read as one library: libkdelay.a first, then the rooms apart beside it
# (kd_ctlonly's, kd_fwdonly's: each one binary's alone). And no call goes
# from libkdelay.a into a room apart (libkdelay.so's --no-undefined says
# so too, but not in the sanitizer and fuzzer builds), nor from one room
# apart into another.
# Usage: check_lib_calls.sh LIBKDELAY_A [ROOM_APART_A...]
set -euo pipefail
(($# > 0)) || { echo "usage: check_lib_calls.sh LIBKDELAY_A [ROOM_APART_A...]" >&2; exit 2; }
# "caller callee symbol caller_archive callee_archive" for every call from
# one object into another (archives numbered from 1, as given).
calls=$(i=0; for a in "$@"; do i=$((i + 1)); nm -A "$a" | sed "s/^/$i /"; done | awk '
  { n = split($2, p, ":"); obj = p[n - 1]; sub(/\.o$/, "", obj); arch[obj] = $1 }
  $3 == "U" { use[obj, $4] = 1; next }
  $3 ~ /^[A-Z]$/ { def[$4] = obj }
  END {
    for (k in use) {
      split(k, u, SUBSEP)
      if ((u[2] in def) && def[u[2]] != u[1])
        print u[1], def[u[2]], u[2], arch[u[1]], arch[def[u[2]]]
    }
  }' | sort)
objs=$(for a in "$@"; do ar t "$a"; done | wc -l)
across=$(awk '$4 != $5 && ($4 == 1 || $5 != 1)' <<<"$calls")
if [ -n "$across" ]; then
  echo "check_lib_calls: calls out of libkdelay.a into a room apart, or between rooms apart:" >&2
  awk -v names="$*" 'BEGIN { split(names, a, " ") }
    { print "  " $1 " (" a[$4] ") -> " $2 " (" a[$5] "): " $3 }' <<<"$across" >&2
  exit 1
fi
# tsort names the files of each circle it meets on standard error.
if ! loops=$(awk '{ print $2, $1 }' <<<"$calls" | sort -u | tsort 2>&1 >/dev/null) ||
  [ -n "$loops" ]; then
  echo "check_lib_calls: files that call each other in a circle:" >&2
  in_loop=$(sed -n 's/^tsort: //p' <<<"$loops" | grep -v 'input contains a loop' | sort -u)
  # The calls between the files of the circles, with the names called.
  awk -v files="$(tr '\n' ' ' <<<"$in_loop")" '
    BEGIN { n = split(files, f, " "); for (i = 1; i <= n; i++) is[f[i]] = 1 }
    ($1 in is) && ($2 in is) { names[$1 " -> " $2] = names[$1 " -> " $2] " " $3 }
    END { for (k in names) print "  " k ":" names[k] }' <<<"$calls" | sort >&2
  exit 1
fi
echo "check_lib_calls: $objs objects, $(awk '{ print $1, $2 }' <<<"$calls" | sort -u | wc -l) calling pairs, no circle"
