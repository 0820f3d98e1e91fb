#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# releases.sh - reads and checks RELEASES, the record of kdelay's releases
# that travels with the tree (a clone has no tags). Its format is in its
# header; docs/development.md "Cutting a release" uses the verbs below.
#
#   scripts/releases.sh previous X.Y.Z   the newest recorded release older
#                                        than X.Y.Z: "VERSION COMMIT SCHEMA
#                                        DATE" (nothing, exit 0, if none)
#   scripts/releases.sh record           the line that records HEAD as the
#                                        release it is (HEAD must be a
#                                        release commit: KDELAY_VERSION_PRE
#                                        "", a CHANGELOG heading, not yet
#                                        recorded)
#   scripts/releases.sh check            every line well formed, versions
#                                        ascending, each dated as its
#                                        CHANGELOG heading; with git, each
#                                        commit on HEAD's history carrying
#                                        that version (PRE empty) and
#                                        schema; and the tree's own version
#                                        not behind the record
# Options: -C SOURCE_DIR (default: this script's tree).
# Exit 0 ok, 1 a finding (one line each on stderr), 2 usage.
set -euo pipefail
src=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
usage() { echo "usage: releases.sh [-C SOURCE_DIR] previous X.Y.Z | record | check" >&2; exit 2; }
if [ "${1:-}" = -C ]; then
    [ $# -ge 2 ] || usage
    src=$(cd "$2" && pwd)
    shift 2
fi
[ $# -ge 1 ] || usage
verb=$1
shift
file=$src/RELEASES
findings=0
finding() { echo "releases.sh: $*" >&2; findings=$((findings + 1)); }

# cmp_versions A B: -1, 0 or 1 (X.Y.Z, numerically)
cmp_versions() {
    local IFS=. a b i
    read -r -a a <<<"$1"
    read -r -a b <<<"$2"
    for i in 0 1 2; do
        ((10#${a[i]} < 10#${b[i]})) && { echo -1; return; }
        ((10#${a[i]} > 10#${b[i]})) && { echo 1; return; }
    done
    echo 0
}
# lines: the records, "VERSION COMMIT SCHEMA DATE", comments left out
lines() { grep -v -e '^#' -e '^[[:space:]]*$' "$file" || true; }
# version_at REV: X.Y.Z of the tree at REV (kdelay.h; 0.1.0's CMakeLists.txt)
version_at() {
    local v
    v=$(git -C "$src" show "$1:include/kdelay/kdelay.h" 2>/dev/null |
        sed -n 's/^#define KDELAY_VERSION_STR "\([0-9.]*\)"$/\1/p')
    [ -n "$v" ] || v=$(git -C "$src" show "$1:CMakeLists.txt" 2>/dev/null |
        sed -n 's/^project(kdelay VERSION \([0-9.]*\) .*/\1/p')
    echo "$v"
}
# pre_at REV: KDELAY_VERSION_PRE at REV, "-" where the header has none
pre_at() {
    git -C "$src" show "$1:include/kdelay/kdelay.h" 2>/dev/null |
        sed -n 's/^#define KDELAY_VERSION_PRE "\(.*\)"$/\1/p' | grep . || echo -
}
# schema_of NAMES...: the highest NNN of NNN_*.sql
schema_of() {
    local n max=0
    for n in "$@"; do
        n=${n##*/}
        [[ $n =~ ^([0-9]{3})_.*\.sql$ ]] || continue
        ((10#${BASH_REMATCH[1]} > max)) && max=$((10#${BASH_REMATCH[1]}))
    done
    echo "$max"
}
tree_version() { sed -n 's/^#define KDELAY_VERSION_STR "\([0-9.]*\)"$/\1/p' "$src/include/kdelay/kdelay.h"; }
tree_pre() { sed -n 's/^#define KDELAY_VERSION_PRE "\(.*\)"$/\1/p' "$src/include/kdelay/kdelay.h"; }
has_git() { command -v git >/dev/null && [ "$(git -C "$src" rev-parse --show-toplevel 2>/dev/null)" = "$(cd "$src" && pwd -P)" ]; }

case $verb in
previous)
    if [ $# -ne 1 ] || ! [[ $1 =~ ^[0-9]+\.[0-9]+\.[0-9]+$ ]]; then usage; fi
    [ -f "$file" ] || { echo "releases.sh: no $file" >&2; exit 1; }
    best=""
    while read -r v c s d; do
        [ "$(cmp_versions "$v" "$1")" = -1 ] || continue
        [ -z "$best" ] || [ "$(cmp_versions "$v" "${best%% *}")" = 1 ] || continue
        best="$v $c $s $d"
    done < <(lines)
    [ -z "$best" ] || echo "$best"
    ;;
record)
    [ $# -eq 0 ] || usage
    has_git || { echo "releases.sh: $src is not a git work tree" >&2; exit 1; }
    v=$(tree_version)
    [ -z "$(tree_pre)" ] || { echo "releases.sh: HEAD is not a release: KDELAY_VERSION_PRE is \"$(tree_pre)\"" >&2; exit 1; }
    day=$(sed -n "s/^## $v — \([0-9-]*\)$/\1/p" "$src/CHANGELOG.md" | head -n 1)
    [ -n "$day" ] || { echo "releases.sh: no \"## $v — YYYY-MM-DD\" heading in CHANGELOG.md" >&2; exit 1; }
    ! lines | grep -q "^$v " || { echo "releases.sh: $v is recorded already" >&2; exit 1; }
    head=$(git -C "$src" rev-parse HEAD)
    git -C "$src" diff --quiet HEAD -- include deploy/mysql CHANGELOG.md ||
        { echo "releases.sh: uncommitted changes to include/, deploy/mysql/ or CHANGELOG.md: HEAD is not what would be recorded" >&2; exit 1; }
    echo "$v $head $(schema_of "$src"/deploy/mysql/*.sql) $day"
    ;;
check)
    [ $# -eq 0 ] || usage
    [ -f "$file" ] || { echo "releases.sh: no $file" >&2; exit 1; }
    git=0
    has_git && git=1
    prev="" n=0
    while IFS= read -r line; do
        n=$((n + 1))
        if ! [[ $line =~ ^([0-9]+\.[0-9]+\.[0-9]+)\ ([0-9a-f]{40})\ ([0-9]+)\ ([0-9]{4}-[0-9]{2}-[0-9]{2})$ ]]; then
            finding "RELEASES: \"$line\" is not \"X.Y.Z COMMIT(40 hex) SCHEMA YYYY-MM-DD\""
            continue
        fi
        v=${BASH_REMATCH[1]} c=${BASH_REMATCH[2]} s=${BASH_REMATCH[3]} d=${BASH_REMATCH[4]}
        [ -z "$prev" ] || [ "$(cmp_versions "$prev" "$v")" = -1 ] ||
            finding "RELEASES: $v follows $prev (oldest first, each version once)"
        prev=$v
        grep -qx "## $v — $d" "$src/CHANGELOG.md" ||
            finding "RELEASES: $v $d has no \"## $v — $d\" heading in CHANGELOG.md"
        ((git)) || continue
        if ! git -C "$src" cat-file -e "$c^{commit}" 2>/dev/null; then
            finding "RELEASES: $v: no commit $c in this clone"
            continue
        fi
        git -C "$src" merge-base --is-ancestor "$c" HEAD ||
            finding "RELEASES: $v: commit $c is not on HEAD's history"
        [ "$(version_at "$c")" = "$v" ] ||
            finding "RELEASES: $v: commit $c is version $(version_at "$c")"
        p=$(pre_at "$c")
        [ "$p" = - ] || [ -z "$p" ] || finding "RELEASES: $v: commit $c is not a release (KDELAY_VERSION_PRE \"$p\")"
        mapfile -t names < <(git -C "$src" ls-tree --name-only "$c" deploy/mysql/)
        cs=$(schema_of "${names[@]}")
        [ "$cs" = "$s" ] || finding "RELEASES: $v: commit $c carries schema $cs, not $s"
    done < <(lines)
    [ $n -gt 0 ] || finding "RELEASES records no release"
    # The tree is at or past the last release: heading for a newer one
    # (PRE set), or that release itself (its release commit, not recorded
    # yet, or a later commit that recorded it).
    tv=$(tree_version)
    if [ -n "$prev" ] && [ -n "$tv" ]; then
        c=$(cmp_versions "$tv" "$prev")
        if [ -n "$(tree_pre)" ]; then
            [ "$c" = 1 ] || finding "the tree heads for $tv-$(tree_pre) but RELEASES records $prev: raise KDELAY_VERSION_STR"
        else
            [ "$c" != -1 ] || finding "the tree is release $tv, older than the recorded $prev"
        fi
    fi
    [ $findings -eq 0 ] || exit 1
    echo "releases.sh: RELEASES: $n releases, the newest $prev$( ((git)) || echo ' (no git: commits not checked)')"
    ;;
*) usage ;;
esac
