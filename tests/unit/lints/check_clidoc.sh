#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# The generated man pages and completions (tools/kd_clidoc.sh, kd_confdoc
# --man): each page renders without a warning (groff -ww, man --warnings),
# every verb and option of --help is in kdelayctl(1), every property in
# kdelay.conf(5); the bash completion parses and completes verbs,
# sub-verbs and options; the zsh one parses when zsh is installed. And the
# output conventions that need no broker: tables with a header row
# (--no-headers: none), --json one document, -q accepted before or after
# the verb, --no-headers refused by the forwarder. And the tier-choosing
# examples' DEFAULT_TIERS is the default ladder.
# Usage: check_clidoc.sh DOC_DIR KDELAYCTL KDELAY_FORWARDER CONFIGURATION_MD
set -euo pipefail
doc=${1:?usage: check_clidoc.sh DOC_DIR KDELAYCTL KDELAY_FORWARDER CONFIGURATION_MD}
ctl=${2:?} fwd=${3:?} confmd=${4:?}
fail() { echo "check_clidoc: $*" >&2; exit 1; }

for p in kdelayctl.1 kdelay-forwarder.8 kdelay.conf.5; do
  f=$doc/$p
  [ -s "$f" ] || fail "$f missing"
  if command -v groff >/dev/null; then
    w=$(groff -man -ww -z "$f" 2>&1) || fail "$p: groff failed: $w"
    [ -z "$w" ] || fail "$p: groff warnings: $w"
  fi
  if command -v man >/dev/null; then
    w=$(LC_ALL=C.UTF-8 MANWIDTH=80 man --warnings -E UTF-8 -l -Tutf8 -Z "$f" 2>&1 >/dev/null) || fail "$p: man failed: $w"
    [ -z "$w" ] || fail "$p: man warnings: $w"
  fi
done

verbs=$("$ctl" --help | awk '/^Verbs:/ { f = 1; next } f && /^$/ { exit } f { print $1 }')
[ -n "$verbs" ] || fail "no verbs in kdelayctl --help"
mapfile -t verb_list <<<"$verbs" # one a line
for v in "${verb_list[@]}"; do
  V=$(echo "$v" | tr '[:lower:]' '[:upper:]')
  grep -q "^\.SH \"KDELAYCTL $V\"" "$doc/kdelayctl.1" || fail "kdelayctl.1 lacks verb $v"
  for o in $("$ctl" "$v" --help | grep -o -- '--[a-z][a-z0-9-]*' | sort -u); do
    grep -qF -- "$(printf '%s' "$o" | sed 's/-/\\-/g')" "$doc/kdelayctl.1" || fail "kdelayctl.1 lacks $v $o"
  done
done
for o in --quiet --no-headers; do
  grep -qF -- "$(printf '%s' "$o" | sed 's/-/\\-/g')" "$doc/kdelayctl.1" || fail "kdelayctl.1 lacks $o"
done
# shellcheck disable=SC2016 # the backquotes are literal: Markdown code
while IFS= read -r prop; do
  grep -qxF -- "\\fB$(printf '%s' "$prop" | sed 's/-/\\-/g')\\fR" "$doc/kdelay.conf.5" || fail "kdelay.conf.5 lacks $prop"
done < <(sed -n 's/^| `\([^`]*\)`.*/\1/p' "$confmd")

# bash completion: parses; completes what --help lists.
bc=$doc/kdelayctl.bash-completion
bash -n "$bc" || fail "bash -n $bc"
complete_words() { # words of the command line, the last one being completed
  bash -c 'source "$1"; shift; COMP_WORDS=("$@"); COMP_CWORD=$(($# - 1)); _kdelayctl; printf "%s\n" "${COMPREPLY[@]}"' _ "$bc" "$@" | sort | tr '\n' ' '
}
want=$(printf '%s\n' "${verb_list[@]}" | sort | tr '\n' ' ')
got=$(complete_words kdelayctl "")
[ "$got" = "$want" ] || fail "completion of verbs: got '$got', want '$want'"
got=$(complete_words kdelayctl -b 127.0.0.1:9092 -q "")
[ "$got" = "$want" ] || fail "completion of verbs after common options: got '$got'"
got=$(complete_words kdelayctl tasks "")
[ "$got" = "find list " ] || fail "completion of tasks' sub-verbs: got '$got'"
got=$(complete_words kdelayctl tasks list --l)
[ "$got" = "--limit " ] || fail "completion of tasks list --l: got '$got'"
got=$(complete_words kdelayctl audit --)
for o in --fix --json --quiet --no-headers --brokers; do
  case " $got " in *" $o "*) ;; *) fail "completion of audit --: no $o in '$got'" ;; esac
done
if command -v zsh >/dev/null; then
  zsh -n "$doc/_kdelayctl" || fail "zsh -n _kdelayctl"
  zmsg="zsh parses _kdelayctl"
else
  zmsg="zsh not installed: _kdelayctl not parsed"
fi

# Output conventions without a broker (tiers plan computes offline).
# Captured first: grep -q stops reading at its match (SIGPIPE + pipefail).
plan=$("$ctl" tiers plan --samples 1000)
grep -q '^TIER  *WRITES' <<<"$plan" || fail "tiers plan: no header row"
plan=$("$ctl" tiers plan --samples 1000 --no-headers)
! grep -q '^TIER ' <<<"$plan" || fail "tiers plan --no-headers: header row"
n=$("$ctl" -q tiers plan --samples 1000 --json | wc -l)
[ "$n" = 1 ] || fail "tiers plan --json: $n lines, want one document"
"$ctl" tiers plan --samples 1000 --quiet --json >/dev/null || fail "--quiet after the verb"
# The examples that choose a tier themselves default to kdelay's ladder: a
# fresh install creates only the default ladder's topics.
root=$(cd "$(dirname "$confmd")/.." && pwd)
ladder=$("$ctl" -c /dev/null tiers plan --samples 1 | awk '$1 == "ladder" { print $2 }')
[ -n "$ladder" ] || fail "tiers plan: no ladder line"
for f in examples/python/schedule.py examples/node/schedule.js examples/java/src/main/java/Schedule.java; do
  got=$(tr -d '\n' <"$root/$f" | grep -o 'DEFAULT_TIERS *=[^=]*' | head -1 |
        grep -o "\"[^\"]*\"\|'[^']*'" | tr -d "\"'\n")
  [ "$got" = "$ladder" ] || fail "$f: DEFAULT_TIERS \"$got\", the default ladder is \"$ladder\""
done
rc=0; "$fwd" --no-headers >/dev/null 2>&1 || rc=$?
[ "$rc" = 2 ] || fail "kdelay-forwarder --no-headers: exit $rc, want 2"
echo "check_clidoc: 3 man pages render without warnings; ${#verb_list[@]} verbs, their options and every property documented; bash completion completes verbs, sub-verbs, options; $zmsg; tables, --no-headers, --json, -q ok; the examples' default ladder is kdelay's"
