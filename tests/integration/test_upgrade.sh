#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# test_upgrade: the rolling upgrade of docs/upgrading.md, in both delivery
# modes side by side. The previous release's forwarders (two per mode) and
# kdelayctl run against one fresh database at the previous schema; the next
# release's `kdelayctl db migrate` runs under them; the previous kdelayctl
# cancels and asks status after it; the forwarders are replaced one by one
# by the next release's; the next kdelayctl schedules and cancels. Past an
# opt-in step (schema 11, lean-fate) it is taken, 30 more tasks go under
# runs of delivered claims, and 7 ids that fired are scheduled again (5
# delivered under runs, 2 marked FIRED before: one by a previous
# forwarder). Then the target topics hold every task not cancelled (lost
# 0), none before its fire-at (early 0), no cancelled one, no second
# schedule of a fired id, and in exactly_once none twice.
#
# PREVIOUS: the newest release in RELEASES (the record in the tree: tags
# do not travel with a clone; `scripts/releases.sh previous`) whose version
# is older than this tree's KDELAY_VERSION_STR, at its recorded commit
# (its schema checked against RELEASES): for a tree heading for 0.3.0
# (0.3.0-dev+...), for 0.3.0's release commit and for the commit that
# records it, that is 0.2.0. Or the ref $KDELAY_UPGRADE_PREVIOUS. HEAD
# stands for it only when RELEASES records no older release. Built from
# `git archive` (kdelay-forwarder and kdelayctl only, -DKDELAY_WERROR=OFF:
# a newer compiler's new warning in a past release is not this tree's)
# into ${XDG_CACHE_HOME:-~/.cache}/kdelay/release-<commit>/, reused while
# present.
# NEXT: BUILD_DIR's binaries when this tree's schema is newer than
# PREVIOUS's (a real migration follows it) and its version differs.
# Otherwise a copy of this tree (its tracked files, uncommitted changes
# included) with, where the schemas are the same, the stand-in migration
# tests/upgrade/next-migration.sql planted as the next schema version and,
# where the versions are the same, the release bumped to the next patch;
# built into .../kdelay/next-<hash of tree and changes>/, reused likewise.
# A cold cache costs two builds of the two binaries; a warm one none.
#
# Skipped (exit 77) when KDELAY_UPGRADE_SKIP is set: the sanitizer build
# sets it (ctest ENVIRONMENT), as the binaries under test are the cached
# plain builds either way.
# Usage: test_upgrade.sh SOURCE_DIR BUILD_DIR
set -euo pipefail
src=$(cd "${1:?usage: test_upgrade.sh SOURCE_DIR BUILD_DIR}" && pwd)
build=$(cd "${2:?usage: test_upgrade.sh SOURCE_DIR BUILD_DIR}" && pwd)
check=(/usr/bin/python3 -B "$src/tests/integration/test_upgrade_check.py")
start_s=$(date +%s)

log() { # LEVEL EVENT [key=value...]
    local level=$1 event=$2
    shift 2
    printf 'ts=%s level=%s prog=test_upgrade event=%s%s\n' "$(date -u +%FT%T.%3NZ)" \
        "$level" "$event" "$(printf ' %s' "$@")" >&2
}
fail() { log error failed "why=\"$*\""; exit 1; }
now_ms() { date +%s%3N; }

if [ -n "${KDELAY_UPGRADE_SKIP:-}" ]; then
    log info skipped "why=\"$KDELAY_UPGRADE_SKIP\""
    echo "test_upgrade: skipped: $KDELAY_UPGRADE_SKIP"
    exit 77
fi
: "${KDELAY_BROKERS:?integration tests need KDELAY_BROKERS (stack.sh env)}"
: "${KDELAY_MYSQL_URL:?integration tests need KDELAY_MYSQL_URL (stack.sh env)}"
git -C "$src" rev-parse --git-dir >/dev/null 2>&1 || fail "$src is not a git clone: the previous release is built from its commit (RELEASES)"

cache=${XDG_CACHE_HOME:-$HOME/.cache}/kdelay
mkdir -p "$cache"
tmp=$(mktemp -d)
declare -A fwd_pid=()
db="" topics=()
cleanup() {
    local rc=$? k
    for k in "${!fwd_pid[@]}"; do kill -TERM "${fwd_pid[$k]}" 2>/dev/null || true; done
    for k in "${!fwd_pid[@]}"; do wait "${fwd_pid[$k]}" 2>/dev/null || true; done
    [ -z "$db" ] || "${check[@]}" sql "DROP DATABASE IF EXISTS \`$db\`" || true
    [ ${#topics[@]} -eq 0 ] || "${check[@]}" delete-topics "${topics[@]}" || true
    if [ $rc -ne 0 ] && [ $rc -ne 77 ]; then
        for k in "$tmp"/*.log; do
            [ -f "$k" ] || continue
            echo "--- last lines of $(basename "$k")" >&2
            tail -n 15 "$k" >&2
        done
    fi
    rm -rf "$tmp"
    log info "done" rc=$rc seconds=$(( $(date +%s) - start_s ))
    exit $rc
}
trap cleanup EXIT

# ------------------------------------------------------------ the builds
version_of() { # HEADER: its KDELAY_VERSION_STR
    sed -n 's/^#define KDELAY_VERSION_STR "\([0-9.]*\)"$/\1/p' "$1"
}
newest_schema() { # NAMES...: the highest NNN of NNN_name.sql
    local n max=0
    for n in "$@"; do
        n=$(basename "$n")
        [[ $n =~ ^([0-9]{3})_[A-Za-z0-9_]+\.sql$ ]] || continue
        (( 10#${BASH_REMATCH[1]} > max )) && max=$(( 10#${BASH_REMATCH[1]} ))
    done
    echo "$max"
}
# build_cached DIR PREPARE [CMAKE_ARGS...]: unless DIR/done, PREPARE
# DIR/src fills the source tree, then kdelay-forwarder and kdelayctl are
# built in DIR/build. One build at a time per DIR (flock); a failed one is
# started over.
build_cached() {
    local dir=$1 prepare=$2
    shift 2
    mkdir -p "$dir"
    exec 9>"$dir.lock"
    flock 9
    if [ ! -f "$dir/done" ]; then
        log info build dir="$dir" log="$dir/build.log"
        local t0
        t0=$(date +%s)
        rm -rf "$dir/src" "$dir/build"
        mkdir -p "$dir/src"
        "$prepare" "$dir/src"
        if ! { cmake -S "$dir/src" -B "$dir/build" -DCMAKE_BUILD_TYPE=RelWithDebInfo "$@" &&
               cmake --build "$dir/build" -j "${KDELAY_UPGRADE_JOBS:-2}" \
                   --target kdelay-forwarder kdelayctl; } >"$dir/build.log" 2>&1; then
            tail -n 30 "$dir/build.log" >&2
            exec 9>&-
            fail "build of $dir failed (log: $dir/build.log)"
        fi
        touch "$dir/done"
        log info built dir="$dir" seconds=$(( $(date +%s) - t0 ))
    fi
    exec 9>&-
}

# PREVIOUS
cur_version=$(version_of "$src/include/kdelay/kdelay.h")
[ -n "$cur_version" ] || fail "no KDELAY_VERSION_STR in $src/include/kdelay/kdelay.h"
if [ -n "${KDELAY_UPGRADE_PREVIOUS:-}" ]; then
    prev_ref=$KDELAY_UPGRADE_PREVIOUS
    prev_sha=$(git -C "$src" rev-parse -q --verify "$prev_ref^{commit}") || fail "no commit $prev_ref"
else
    rel=$("$src/scripts/releases.sh" -C "$src" previous "$cur_version") || fail "scripts/releases.sh previous $cur_version"
    if [ -n "$rel" ]; then
        read -r rel_version prev_sha rel_schema _ <<<"$rel"
        prev_ref="release $rel_version"
        git -C "$src" cat-file -e "$prev_sha^{commit}" 2>/dev/null ||
            fail "RELEASES: commit $prev_sha of $rel_version is not in this clone (a shallow clone? git fetch --unshallow)"
        log info previous_release version="$rel_version" commit="$prev_sha" schema="$rel_schema"
    else
        log info no_previous_release older_than="$cur_version" using=HEAD \
            "note=\"RELEASES records no release older than $cur_version: HEAD stands for one\""
        prev_ref=HEAD
        prev_sha=$(git -C "$src" rev-parse HEAD)
    fi
fi
prepare_previous() { git -C "$src" archive "$prev_sha" | tar -x -C "$1"; }
prev_dir=$cache/release-$prev_sha
build_cached "$prev_dir" prepare_previous -DKDELAY_WERROR=OFF -DKDELAY_REVISION="$prev_sha"
prev_bin=$prev_dir/build
mapfile -t prev_sql < <(git -C "$src" ls-tree --name-only "$prev_sha" deploy/mysql/)
prev_schema=$(newest_schema "${prev_sql[@]}")
[ -z "${rel_schema:-}" ] || [ "$rel_schema" = "$prev_schema" ] ||
    fail "RELEASES says $rel_version is schema $rel_schema, its commit carries $prev_schema"
# X.Y.Z of the previous release, from its --version (0.3.0-dev+... -> 0.3.0)
prev_release=$("$prev_bin/kdelayctl" --version | awk '{print $2}')
prev_release=${prev_release%%[-+]*}

# NEXT
cur_schema=$(newest_schema "$src"/deploy/mysql/*.sql)
planted="" next_version=""
(( cur_schema > prev_schema )) || planted=$(printf '%03d_upgrade_probe.sql' $(( cur_schema + 1 )))
if [ "$prev_release" = "$cur_version" ]; then
    IFS=. read -r ma mi pa <<<"$cur_version"
    next_version=$ma.$mi.$(( pa + 1 ))
fi
if [ -z "$planted" ] && [ -z "$next_version" ]; then
    next_bin=$build
else
    # The tracked files as they are, uncommitted changes included.
    tree_ref=$(git -C "$src" stash create) || fail "git stash create (a copy of the tree)"
    tree_ref=${tree_ref:-HEAD}
    tree_sha=$(git -C "$src" rev-parse "$tree_ref^{commit}")
    key=$( { git -C "$src" rev-parse "$tree_ref^{tree}"; echo "$planted $next_version"
             cat "$src/tests/upgrade/next-migration.sql"; } | sha256sum | cut -c1-16)
    prepare_next() {
        git -C "$src" archive "$tree_ref" | tar -x -C "$1"
        [ -z "$planted" ] || cp "$src/tests/upgrade/next-migration.sql" "$1/deploy/mysql/$planted"
        if [ -n "$next_version" ]; then
            sed -i "s/^#define KDELAY_VERSION_STR \"$cur_version\"$/#define KDELAY_VERSION_STR \"$next_version\"/" \
                "$1/include/kdelay/kdelay.h"
            [ "$(version_of "$1/include/kdelay/kdelay.h")" = "$next_version" ] ||
                fail "could not bump the copy's release to $next_version"
        fi
    }
    next_dir=$cache/next-$key
    build_cached "$next_dir" prepare_next -DKDELAY_REVISION="$tree_sha"
    next_bin=$next_dir/build
fi
next_schema=$(( cur_schema + (${#planted} > 0 ? 1 : 0) ))
# The opt-in step the next release's db migrate stops before
# (docs/upgrading.md, step 5): its newest migration, when it says
# "-- kdelay: opt-in NAME" (schema 11, lean-fate). Taken after the roll.
optin_step="" optin_schema=0
if [ -z "$planted" ]; then
    newest_sql=$(ls "$src"/deploy/mysql/"$(printf '%03d' "$cur_schema")"_*.sql)
    optin_step=$(sed -n 's/^-- kdelay: opt-in \([a-z0-9-]*\) *$/\1/p' "$newest_sql")
    [ -z "$optin_step" ] || optin_schema=$cur_schema
fi
migrate_schema=$(( optin_schema > 0 ? optin_schema - 1 : next_schema ))
prev_v=$("$prev_bin/kdelayctl" --version | awk '{print $2}')
next_v=$("$next_bin/kdelayctl" --version | awk '{print $2}')
for b in "$prev_bin/kdelay-forwarder" "$next_bin/kdelay-forwarder"; do
    "$b" --version >/dev/null || fail "$b --version"
done
[ "$prev_v" != "$next_v" ] || fail "previous and next are both release $prev_v"
prev_name="$prev_v (schema $prev_schema, $prev_ref ${prev_sha:0:12})"
next_name="$next_v (schema $next_schema, "
if [ "$next_bin" = "$build" ]; then
    next_name+="$build)"
else
    next_name+="a copy${planted:+ with $planted planted}${next_version:+, bumped to $next_version})"
fi
log info releases previous="\"$prev_name\"" next="\"$next_name\"" \
    previous_bin="$prev_bin" next_bin="$next_bin"

# ------------------------------------------------------------ the stack
run_id=$$_$RANDOM
db=kdup_$run_id
"${check[@]}" sql "CREATE DATABASE \`$db\`" || fail "CREATE DATABASE $db"
KDELAY_MYSQL_URL=$("${check[@]}" mysql-url "$db")
export KDELAY_MYSQL_URL
unset KDELAY_CONFIG
modes=(at_least_once exactly_once)
declare -A prefix=() target=()
for m in "${modes[@]}"; do
    prefix[$m]=kdup${run_id}_${m%%_*}
    target[$m]=${prefix[$m]}.target
    cat >"$tmp/$m.conf" <<EOF
topic_prefix = "${prefix[$m]}";
tiers = [ "1s", "5s", "20s" ];
topics = { partitions = 3; };
forwarder = { group_id = "${prefix[$m]}-group"; delivery = "$m";
              static_membership = 1; stats_interval = "0s"; };
EOF
    topics+=("${target[$m]}" "${prefix[$m]}.tier.1s" "${prefix[$m]}.tier.5s"
             "${prefix[$m]}.tier.20s" "${prefix[$m]}.dead")
    : >"$tmp/$m.tasks"
    : >"$tmp/$m.cancelled"
    : >"$tmp/$m.repeated"
done
ctl() { # RELEASE MODE ARGS...: that release's kdelayctl with the mode's settings
    local rel=$1 m=$2 bin
    shift 2
    [ "$rel" = previous ] && bin=$prev_bin || bin=$next_bin
    "$bin/kdelayctl" -c "$tmp/$m.conf" -q "$@"
}

out=$("$prev_bin/kdelayctl" -q db migrate) || fail "previous db migrate"
v=$("$prev_bin/kdelayctl" db version --json) || fail "previous db version"
log info migrated by=previous database="$db" version="$v" said="\"$out\""
for m in "${modes[@]}"; do
    ctl previous "$m" topics create >/dev/null || fail "$m: previous topics create"
    "${check[@]}" create-topic "${target[$m]}" 3 || fail "$m: create ${target[$m]}"
done

# ------------------------------------------------------------ forwarders
fwd_start() { # RELEASE MODE INSTANCE
    local rel=$1 m=$2 inst=$3 bin
    [ "$rel" = previous ] && bin=$prev_bin || bin=$next_bin
    "$bin/kdelay-forwarder" -c "$tmp/$m.conf" -X "forwarder.instance=$inst" \
        >>"$tmp/$m-$inst-$rel.log" 2>&1 &
    fwd_pid[$m-$inst]=$!
    log info forwarder_started mode="$m" instance="$inst" release="$rel" pid=$!
}
fwd_stop() { # MODE INSTANCE: SIGTERM, waits for its exit, which must be clean
    local m=$1 inst=$2 rc=0 pid=${fwd_pid[$1-$2]}
    kill -TERM "$pid"
    wait "$pid" || rc=$?
    unset "fwd_pid[$m-$inst]"
    log info forwarder_stopped mode="$m" instance="$inst" pid="$pid" rc=$rc
    [ $rc -eq 0 ] || fail "$m: forwarder $inst (pid $pid) exited $rc"
}
wait_log() { # FILE PATTERN SECONDS WHAT
    local i
    for ((i = 0; i < $3 * 10; i++)); do
        grep -q "$2" "$1" 2>/dev/null && return 0
        sleep 0.1
    done
    fail "$4: no '$2' in $(basename "$1") within $3 s"
}
for m in "${modes[@]}"; do
    fwd_start previous "$m" fw-a
    fwd_start previous "$m" fw-b
done
for m in "${modes[@]}"; do
    for inst in fw-a fw-b; do
        wait_log "$tmp/$m-$inst-previous.log" event=partitions_assigned 60 "$m: previous $inst"
    done
done

# ------------------------------------------------------------ the tasks
# schedule_batch RELEASE MODE FROM TO FIRST_MS STEP_MS TAG: tasks with
# ids TAG-FROM..TAG-(TO-1), task i due at FIRST_MS + i*STEP_MS, by that
# release's kdelayctl.
schedule_batch() {
    local rel=$1 m=$2 from=$3 n=$4 first=$5 step=$6 tag=$7 i id at out
    for ((i = from; i < n; i++)); do
        id=${prefix[$m]}-$tag-$i
        at=$(( first + i * step ))
        out=$(ctl "$rel" "$m" schedule --topic "${target[$m]}" --value "v$i" --key "k$i" \
            --id "$id" --at "$at") || { log error schedule_failed mode="$m" id="$id"; return 1; }
        [ "$out" = "$id" ] || { log error schedule_failed mode="$m" id="$id" out="$out"; return 1; }
        echo "$id $at $rel" >>"$tmp/$m.tasks"
    done
    log info scheduled mode="$m" by="$rel" tasks=$(( n - from )) ids="$tag-$from..$tag-$(( n - 1 ))" \
        first_fire_ms=$(( first + from * step )) step_ms="$step"
}
# cancel_some RELEASE MODE IDS...: each must answer CANCELLED (exit 0)
cancel_some() {
    local rel=$1 m=$2 id out rc
    shift 2
    for id in "$@"; do
        rc=0
        out=$(ctl "$rel" "$m" cancel "$id" 2>&1) || rc=$?
        { [ $rc -eq 0 ] && [[ $out == *CANCELLED* ]]; } ||
            fail "$m: $rel kdelayctl cancel $id: exit $rc: $out"
        echo "$id $rel" >>"$tmp/$m.cancelled"
    done
    log info cancelled mode="$m" by="$rel" tasks=$#
}
# status_some RELEASE MODE FATE IDS...: status answers (exit 0); with
# FATE other than -, that fate
status_some() {
    local rel=$1 m=$2 want=$3 id out
    shift 3
    for id in "$@"; do
        out=$(ctl "$rel" "$m" status "$id" --json) || fail "$m: $rel kdelayctl status $id failed"
        [[ $out == *'"id":"'"$id"'"'* ]] || fail "$m: $rel kdelayctl status $id: $out"
        [ "$want" = - ] || [[ $out == *'"fate":"'"$want"'"'* ]] ||
            fail "$m: $rel kdelayctl status $id: want $want: $out"
    done
    log info status_ok mode="$m" by="$rel" tasks=$# fate="$want"
}
# wait_fired MODE SECONDS IDS...: the next kdelayctl's status says FIRED
# for each within SECONDS (1 when not)
wait_fired() {
    local m=$1 end=$(( $(date +%s) + $2 )) id out
    shift 2
    for id in "$@"; do
        until out=$(ctl next "$m" status "$id" --json 2>&1) &&
              [[ $out == *'"fate":"FIRED"'* ]]; do
            [ "$(date +%s)" -lt "$end" ] ||
                { log error not_fired mode="$m" id="$id" said="\"${out//\"/\'}\""; return 1; }
            sleep 0.2
        done
    done
}
parallel_modes() { # FUNCTION ARGS-AFTER-MODE...: one job per mode, all must succeed
    local fn=$1 m pids=() rc=0 p
    shift
    for m in "${modes[@]}"; do
        "$fn" "$m" "$@" &
        pids+=($!)
    done
    for p in "${pids[@]}"; do wait "$p" || rc=1; done
    return $rc
}

# Step 1: 50 tasks per mode by the previous release, due 25..49.5 s from
# now; the first are due after the migration, before fw-a's replacement.
t0=$(now_ms)
sched_prev() { schedule_batch previous "$1" "$2" "$3" $(( t0 + 25000 )) 500 p; }
parallel_modes sched_prev 0 50 || fail "previous kdelayctl schedule"
status_some previous at_least_once - "${prefix[at_least_once]}-p-0" "${prefix[at_least_once]}-p-49"

# Step 2: the next release's db migrate under the previous forwarders.
out=$("$next_bin/kdelayctl" -q db migrate) || fail "next db migrate"
migrated_ms=$(now_ms)
v=$("$next_bin/kdelayctl" db version --json) || fail "next db version"
[[ $v == *'"database":'"$migrate_schema"* ]] || fail "schema after next db migrate: $v, want $migrate_schema"
[ "$optin_schema" -eq 0 ] || [[ $out == *"waiting $optin_schema $optin_step"* ]] ||
    fail "next db migrate stopped at $migrate_schema without naming the opt-in step: $out"
log info migrated by=next version="$v" said="\"$out\""
out=$("$prev_bin/kdelayctl" -q db migrate) || fail "previous db migrate on the newer schema"
v=$("$prev_bin/kdelayctl" db version --json) || fail "previous db version on the newer schema"
log info previous_migrate_again version="$v" said="\"$out\""
[[ $v == *'"database":'"$migrate_schema"* ]] || fail "schema after previous db migrate again: $v, want $migrate_schema"

# Step 3: the previous kdelayctl, after the migration, schedules 10 more
# per mode (due 50..54.5 s), cancels 8 (due 45..52 s) and asks status.
parallel_modes sched_prev 50 60 || fail "previous kdelayctl schedule after the migration"
for m in "${modes[@]}"; do
    ids=()
    for i in 40 42 44 46 48 50 52 54; do ids+=("${prefix[$m]}-p-$i"); done
    cancel_some previous "$m" "${ids[@]}"
    status_some previous "$m" CANCELLED "${ids[@]:0:3}"
    status_some previous "$m" - "${prefix[$m]}-p-1" "${prefix[$m]}-p-59"
done

# Step 4: at 36 s (tasks due 25..36 s fired by the previous forwarders on
# the migrated schema), fw-a of each mode replaced by the next release's.
sleep_until() { local d=$(( $1 - $(now_ms) )); [ $d -le 0 ] || sleep "$(( d / 1000 )).$(printf '%03d' $(( d % 1000 )))"; }
sleep_until $(( t0 + 36000 ))
replaced_ms=$(now_ms)
replace() { # MODE INSTANCE
    fwd_stop "$1" "$2"
    fwd_start next "$1" "$2"
    wait_log "$tmp/$1-$2-next.log" event=partitions_assigned 60 "$1: next $2"
}
for m in "${modes[@]}"; do replace "$m" fw-a; done
status_some previous at_least_once FIRED "${prefix[at_least_once]}-p-0"
status_some previous exactly_once FIRED "${prefix[exactly_once]}-p-0"
# The opt-in step is refused while a previous forwarder (fw-b: its
# client.id is its instance alone) is a member of the group.
if [ "$optin_schema" -gt 0 ]; then
    for m in "${modes[@]}"; do
        rc=0
        out=$(ctl next "$m" db migrate --enable "$optin_step" 2>&1) || rc=$?
        { [ $rc -eq 2 ] && [[ $out == *refused*fw-b@* ]]; } ||
            fail "$m: next db migrate --enable $optin_step beside a previous forwarder: exit $rc: $out"
        log info enable_refused mode="$m" step="$optin_step" said="\"${out//\"/\'}\""
    done
    v=$("$next_bin/kdelayctl" db version --json) || fail "next db version"
    [[ $v == *'"database":'"$migrate_schema"* ]] || fail "schema after the refusal: $v"
fi

# Step 5: 30 tasks per mode by the next release, due 10..27.4 s from now;
# the next kdelayctl cancels 4 of them (due 22..27 s).
t1=$(now_ms)
sched_next() { schedule_batch next "$1" 0 30 $(( t1 + 10000 )) 600 n; }
parallel_modes sched_next || fail "next kdelayctl schedule"
for m in "${modes[@]}"; do
    cancel_some next "$m" "${prefix[$m]}-n-20" "${prefix[$m]}-n-23" "${prefix[$m]}-n-26" "${prefix[$m]}-n-29"
done

# Step 6: fw-b replaced; the previous kdelayctl's status still answers.
for m in "${modes[@]}"; do replace "$m" fw-b; done
for m in "${modes[@]}"; do
    status_some previous "$m" CANCELLED "${prefix[$m]}-n-20" "${prefix[$m]}-p-40"
    status_some previous "$m" - "${prefix[$m]}-n-0" "${prefix[$m]}-p-59"
done

# Step 6b: every forwarder the next release's: the opt-in step taken
# (docs/upgrading.md step 5); each forwarder switches to runs of
# delivered claims on its own within its 30 s schema read; 30 more tasks
# per mode go under runs; the previous kdelayctl now refuses (the floor).
# The forwarders here are static members, restarted within their session
# timeout: the broker kept the client.id each first joined with (the
# previous release's, the instance alone), so the group check still
# refuses (what docs/upgrading.md says), and --force takes the step.
if [ "$optin_schema" -gt 0 ]; then
    rc=0
    out=$(ctl next at_least_once db migrate --enable "$optin_step" 2>&1) || rc=$?
    { [ $rc -eq 2 ] && [[ $out == *"static member"* ]]; } ||
        fail "next db migrate --enable $optin_step beside static members restarted: exit $rc: $out"
    for m in "${modes[@]}"; do
        out=$(ctl next "$m" db migrate --enable "$optin_step" --force 2>&1) ||
            fail "$m: next db migrate --enable $optin_step --force: $out"
    done
    v=$("$next_bin/kdelayctl" db version --json) || fail "next db version"
    [[ $v == *'"database":'"$optin_schema"* ]] || fail "schema after --enable $optin_step: $v"
    log info enabled step="$optin_step" version="$v"
    for m in "${modes[@]}"; do
        for inst in fw-a fw-b; do
            wait_log "$tmp/$m-$inst-next.log" "event=fate_marks_switch from=rows to=runs" 45 "$m: next $inst"
        done
    done
    t2=$(now_ms)
    sched_lean() { schedule_batch next "$1" 0 30 $(( t2 + 3000 )) 500 l; }
    parallel_modes sched_lean || fail "next kdelayctl schedule under runs"
    rc=0
    out=$(ctl previous at_least_once status "${prefix[at_least_once]}-p-0" 2>&1) || rc=$?
    { [ $rc -ne 0 ] && [[ $out == *"needs kdelay"* ]]; } ||
        fail "previous kdelayctl status at schema $optin_schema: exit $rc: $out"
    log info previous_refused said="\"${out//\"/\'}\""

    # Step 6c: ids scheduled again after they fired (docs/plans/
    # issue-44.md §1.4: "not delivered again"). Five delivered under
    # runs: their rows stay FIRING, a run covers them, and status says
    # FIRED; p-0, delivered by a previous forwarder before the migration,
    # and n-0, by the roll's forwarders before the switch: FIRED marks.
    # The next kdelayctl warns that each already has a fate (FIRED) and
    # schedules it all the same, due 3 s on; the forwarders' claims find
    # the rows delivered (a covered row's owner is an older token, not the
    # new claim's: the read-back reads it again by that owner) and drop
    # the copies, counted as already_fired. Step 7 checks that no record
    # of a second schedule reached the target.
    repeat_fired() { # MODE
        local m=$1 ids=() i id out covered marked at rc
        for i in 0 1 2 3 4 5 6 7 8 9; do ids+=("${prefix[$m]}-l-$i"); done
        wait_fired "$m" 30 "${ids[@]}" || return 1
        covered=$("${check[@]}" sql "SELECT task_id FROM \`$db\`.kdelay_fate WHERE
            state = 'FIRING' AND task_id IN ($(printf "'%s'," "${ids[@]}" | sed 's/,$//'))
            ORDER BY task_id") || { log error covered_read_failed mode="$m"; return 1; }
        read -r -d '' -a ids <<<"$covered" || true
        [ ${#ids[@]} -ge 5 ] || {
            log error too_few_covered mode="$m" covered="\"${ids[*]}\"" \
                "why=\"fewer than 5 of l-0..l-9 read FIRED while their rows are FIRING: runs not recorded?\""
            return 1; }
        ids=("${ids[@]:0:5}")
        marked=$("${check[@]}" sql "SELECT COUNT(*) FROM \`$db\`.kdelay_fate WHERE
            state = 'FIRED' AND task_id IN ('${prefix[$m]}-p-0', '${prefix[$m]}-n-0')") || return 1
        [ "$marked" = 2 ] || { log error not_marked mode="$m" marked="$marked"; return 1; }
        ids+=("${prefix[$m]}-p-0" "${prefix[$m]}-n-0")
        at=$(( $(now_ms) + 3000 ))
        for id in "${ids[@]}"; do
            rc=0
            out=$(ctl next "$m" schedule --topic "${target[$m]}" --value again --key again \
                --id "$id" --at "$at" 2>"$tmp/$m.again.err") || rc=$?
            { [ $rc -eq 0 ] && [ "$out" = "$id" ]; } ||
                { log error schedule_again_failed mode="$m" id="$id" rc=$rc out="$out"; return 1; }
            grep -q "already has a fate (FIRED)" "$tmp/$m.again.err" ||
                { log error no_fired_warning mode="$m" id="$id" said="\"$(tr '\n"' " '" <"$tmp/$m.again.err")\""; return 1; }
            echo "$id $at" >>"$tmp/$m.repeated"
        done
        log info scheduled_again mode="$m" tasks=${#ids[@]} fire_ms="$at" \
            covered_by_runs="\"${ids[*]:0:5}\"" marked="\"${ids[*]:5}\""
    }
    parallel_modes repeat_fired || fail "the repeated schedules of fired ids (above)"
fi

# Step 7: all due, plus 15 s; then the forwarders stop and the targets
# are read.
last=$(awk '{print $2}' "$tmp"/*.tasks "$tmp"/*.repeated | sort -n | tail -n 1)
log info waiting until_ms=$(( last + 15000 ))
sleep_until $(( last + 15000 ))
for m in "${modes[@]}"; do
    fwd_stop "$m" fw-a
    fwd_stop "$m" fw-b
done
# The previous forwarders worked on the newer schema: no refusal, a clean
# exit each. (The start line names the schema its build carries, from
# 0.3.0 on: schema=N.)
for f in "$tmp"/*-previous.log; do
    if grep -v 'event=forwarder_start ' "$f" | grep -iE 'schema|upgrade kdelay' >"$tmp/schema.grep"; then
        fail "$(basename "$f") mentions the schema: $(head -n 3 "$tmp/schema.grep")"
    fi
    grep -q 'event=forwarder_exit err=KDELAY_OK' "$f" || fail "$(basename "$f"): no clean exit"
done
# The ids scheduled again: still FIRED (their rows as they were), and
# dropped by the forwarders as fired, at least once each.
for m in "${modes[@]}"; do
    [ -s "$tmp/$m.repeated" ] || continue
    mapfile -t again < <(awk '{print $1}' "$tmp/$m.repeated")
    status_some next "$m" FIRED "${again[@]}"
    dropped=$(cat "$tmp/$m"-fw-?-next.log | sed -n 's/.*event=forwarder_stopped.* already_fired=\([0-9]*\).*/\1/p' |
        awk '{s += $1} END {print s + 0}')
    log info repeated_dropped mode="$m" scheduled_again=${#again[@]} already_fired="$dropped"
    [ "$dropped" -ge ${#again[@]} ] ||
        fail "$m: the next forwarders dropped $dropped tasks as already fired, want >= ${#again[@]} (the ids scheduled again)"
done
failed=0
for m in "${modes[@]}"; do
    "${check[@]}" verify --mode "$m" --target "${target[$m]}" \
        --tasks "$tmp/$m.tasks" --cancelled "$tmp/$m.cancelled" \
        --repeated "$tmp/$m.repeated" \
        --previous "$prev_name" --next "$next_name" \
        --migrated-ms "$migrated_ms" --replaced-ms "$replaced_ms" || failed=1
done
[ $failed -eq 0 ] || fail "the upgrade's figures (above)"
if [ "$optin_schema" -gt 0 ]; then
    runs=$("${check[@]}" sql "SELECT COUNT(*) FROM \`$db\`.kdelay_fired_run") || fail "count runs"
    log info runs_recorded runs="$runs"
    [ "$runs" -gt 0 ] || fail "no run of delivered claims recorded after --enable $optin_step"
fi
log info passed previous="$prev_v" next="$next_v"
