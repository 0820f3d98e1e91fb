#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# check_version: the version scheme (cmake/version.sh), the record of
# releases (scripts/releases.sh) and what the binaries say.
#  1. version.sh on small git trees made here: a tree heading for 0.3.0
#     (KDELAY_VERSION_PRE "dev") is 0.3.0-dev+<12 hex of HEAD>, deb
#     0.3.0~dev+<same>; its release commit (PRE "") is 0.3.0 with HEAD's
#     commit; the commit after it that only records it in RELEASES is
#     still 0.3.0, with that commit; a copy without .git is
#     0.3.0-dev+unknown, or takes -r COMMIT; a tree unpacked inside another
#     repository is not that repository's HEAD; a bad -r is refused (exit
#     2); OUT is not rewritten when nothing changed, and is when HEAD moves.
#  2. releases.sh on the same trees: previous picks the newest release
#     older than the tree's (0.2.0 for 0.3.0-dev, for 0.3.0's release
#     commit and for the commit recording it); record prints HEAD's line
#     for a release commit only; check accepts the record and names a
#     wrong version, schema, date or order.
#  3. releases.sh check on this repository's RELEASES (its commits, when
#     SOURCE_DIR is a git clone).
#  4. `kdelay-forwarder --version` and `kdelayctl --version` of BUILD_DIR:
#     one line "PROG VERSION commit=REV schema=N librdkafka=V" with this
#     tree's version and commit (version.sh), the newest migration of
#     deploy/mysql and the librdkafka pkg-config names.
# Usage: check_version.sh SOURCE_DIR BUILD_DIR
set -euo pipefail
src=$(cd "${1:?usage: check_version.sh SOURCE_DIR BUILD_DIR}" && pwd)
build=$(cd "${2:?usage: check_version.sh SOURCE_DIR BUILD_DIR}" && pwd)
vsh=$src/cmake/version.sh
rsh=$src/scripts/releases.sh
fail() { echo "check_version: FAILED: $*" >&2; exit 1; }
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
export GIT_AUTHOR_NAME=t GIT_AUTHOR_EMAIL=t@example.invalid GIT_COMMITTER_NAME=t \
    GIT_COMMITTER_EMAIL=t@example.invalid GIT_CONFIG_GLOBAL=/dev/null GIT_CONFIG_NOSYSTEM=1
# field FILE KEY: KEY's value in version.sh's env output FILE
field() { sed -n "s/^$2=//p" "$1"; }
# expect WHAT GOT WANT
expect() { [ "$2" = "$3" ] || fail "$1: got \"$2\", want \"$3\""; }

# ------------------------------------------------ 1. version.sh
t=$tmp/tree
mkdir -p "$t/include/kdelay" "$t/deploy/mysql"
header() { # PRE
    printf '#define KDELAY_VERSION_STR "0.3.0"\n#define KDELAY_VERSION_PRE "%s"\n' "$1" \
        >"$t/include/kdelay/kdelay.h"
}
header dev
: >"$t/deploy/mysql/001_a.sql"
: >"$t/deploy/mysql/009_b.sql"
printf '# Changelog\n\n## Unreleased\n\n## 0.2.0 — 2026-12-03\n' >"$t/CHANGELOG.md"
git -C "$t" init -q -b main
git -C "$t" add -A
git -C "$t" commit -q -m dev
dev_sha=$(git -C "$t" rev-parse HEAD)
"$vsh" "$t" >"$tmp/v"
expect "dev tree version" "$(field "$tmp/v" KDELAY_VERSION)" "0.3.0-dev+${dev_sha:0:12}"
expect "dev tree deb" "$(field "$tmp/v" KDELAY_VERSION_DEB)" "0.3.0~dev+${dev_sha:0:12}"
expect "dev tree revision" "$(field "$tmp/v" KDELAY_REVISION)" "$dev_sha"
expect "dev tree schema" "$(field "$tmp/v" KDELAY_SCHEMA)" 9
"$vsh" -f c "$t" "$tmp/h"
grep -qx "#define KD_BUILD_VERSION \"0.3.0-dev+${dev_sha:0:12}\"" "$tmp/h" || fail "C header: $(cat "$tmp/h")"
grep -qx "#define KD_BUILD_REVISION \"$dev_sha\"" "$tmp/h" || fail "C header: $(cat "$tmp/h")"
touch -d '2000-01-01' "$tmp/h"
"$vsh" -f c "$t" "$tmp/h"
expect "header rewritten though unchanged (mtime)" "$(stat -c %Y "$tmp/h")" "$(date -d 2000-01-01 +%s)"
# A copy without .git: unknown, or the commit given.
mkdir "$tmp/copy"
git -C "$t" archive HEAD | tar -x -C "$tmp/copy"
expect "copy without .git" "$("$vsh" "$tmp/copy" | field /dev/stdin KDELAY_VERSION)" "0.3.0-dev+unknown"
"$vsh" -r "$dev_sha" "$tmp/copy" >"$tmp/v"
expect "copy with -r" "$(field "$tmp/v" KDELAY_VERSION)" "0.3.0-dev+${dev_sha:0:12}"
expect "copy with -r revision" "$(field "$tmp/v" KDELAY_REVISION)" "$dev_sha"
rc=0
"$vsh" -r 'v0.3.0; rm -rf /' "$tmp/copy" >/dev/null 2>&1 || rc=$?
expect "bad -r exit" "$rc" 2
# Unpacked inside another repository's work tree: not that HEAD.
mkdir "$t/inner"
git -C "$t" archive HEAD | tar -x -C "$t/inner"
expect "tree inside another repository" "$("$vsh" "$t/inner" | field /dev/stdin KDELAY_REVISION)" unknown
rm -rf "$t/inner"
# The release commit: PRE "" and a heading.
header ""
printf '# Changelog\n\n## 0.3.0 — 2026-12-07\n\n## 0.2.0 — 2026-12-03\n' >"$t/CHANGELOG.md"
git -C "$t" commit -q -am "release 0.3.0"
rel_sha=$(git -C "$t" rev-parse HEAD)
"$vsh" -f c "$t" "$tmp/h"
grep -qx '#define KD_BUILD_VERSION "0.3.0"' "$tmp/h" || fail "HEAD moved, header not rewritten: $(cat "$tmp/h")"
"$vsh" "$t" >"$tmp/v"
expect "release commit version" "$(field "$tmp/v" KDELAY_VERSION)" 0.3.0
expect "release commit deb" "$(field "$tmp/v" KDELAY_VERSION_DEB)" 0.3.0
expect "release commit revision" "$(field "$tmp/v" KDELAY_REVISION)" "$rel_sha"
expect "release commit date" "$(field "$tmp/v" KDELAY_DATE)" 2026-12-07

# ------------------------------------------------ 2. releases.sh
mkdir -p "$t/scripts"
cp "$rsh" "$t/scripts/"
# 0.2.0 and 0.1.0 stand-ins: earlier commits of this small history would
# need their own trees; the record's previous/ordering logic needs none.
cat >"$t/RELEASES" <<'EOF'
# comment
0.1.0 1111111111111111111111111111111111111111 5 2026-12-02
0.2.0 2222222222222222222222222222222222222222 6 2026-12-03
EOF
rec=$("$rsh" -C "$t" record) || fail "record on the release commit"
expect "record" "$rec" "0.3.0 $rel_sha 9 2026-12-07"
expect "previous of 0.3.0" "$("$rsh" -C "$t" previous 0.3.0)" "0.2.0 2222222222222222222222222222222222222222 6 2026-12-03"
expect "previous of 0.2.0" "$("$rsh" -C "$t" previous 0.2.0 | cut -d' ' -f1)" 0.1.0
expect "previous of 0.1.0" "$("$rsh" -C "$t" previous 0.1.0)" ""
echo "$rec" >>"$t/RELEASES"
git -C "$t" add -A
git -C "$t" commit -q -m "RELEASES: 0.3.0"
after_sha=$(git -C "$t" rev-parse HEAD)
"$vsh" "$t" >"$tmp/v"
expect "after the record: version" "$(field "$tmp/v" KDELAY_VERSION)" 0.3.0
expect "after the record: revision" "$(field "$tmp/v" KDELAY_REVISION)" "$after_sha"
expect "after the record: previous of the tree's 0.3.0" "$("$rsh" -C "$t" previous 0.3.0 | cut -d' ' -f1)" 0.2.0
"$rsh" -C "$t" record >/dev/null 2>&1 && fail "record of a recorded release succeeded"
# check: the fake 0.1.0/0.2.0 commits are findings; a record without them passes.
"$rsh" -C "$t" check 2>"$tmp/err" && fail "check passed commits that are not in the clone"
grep -q "0.2.0: no commit 2222" "$tmp/err" || fail "check: $(cat "$tmp/err")"
printf '%s\n' "$rec" >"$t/RELEASES"
"$rsh" -C "$t" check >/dev/null || fail "check of 0.3.0 at its release commit"
printf '0.3.0 %s 8 2026-12-07\n' "$rel_sha" >"$t/RELEASES"
"$rsh" -C "$t" check 2>"$tmp/err" && fail "check passed a wrong schema"
grep -q "carries schema 9, not 8" "$tmp/err" || fail "check: $(cat "$tmp/err")"
printf '0.3.0 %s 9 2026-12-08\n' "$rel_sha" >"$t/RELEASES"
"$rsh" -C "$t" check 2>"$tmp/err" && fail "check passed a wrong date"
printf '0.3.0 %s 9 2026-12-07\n' "$dev_sha" >"$t/RELEASES"
"$rsh" -C "$t" check 2>"$tmp/err" && fail "check passed a commit that is not a release"
grep -q 'not a release (KDELAY_VERSION_PRE "dev")' "$tmp/err" || fail "check: $(cat "$tmp/err")"
printf '0.3.0 %s 9 2026-12-07\n0.2.0 %s 9 2026-12-03\n' "$rel_sha" "$rel_sha" >"$t/RELEASES"
"$rsh" -C "$t" check 2>"$tmp/err" && fail "check passed a descending record"
grep -q "0.2.0 follows 0.3.0" "$tmp/err" || fail "check: $(cat "$tmp/err")"
# A tree heading for a version already released.
printf '%s\n' "$rec" >"$t/RELEASES"
header dev
"$rsh" -C "$t" check 2>"$tmp/err" && fail "check passed a tree heading for a released version"
grep -q "raise KDELAY_VERSION_STR" "$tmp/err" || fail "check: $(cat "$tmp/err")"
echo "check_version: version.sh and releases.sh as specified"

# ------------------------------------------------ 3. this repository's record
"$rsh" -C "$src" check

# ------------------------------------------------ 4. --version
"$vsh" "$src" >"$tmp/v"
want_version=$(field "$tmp/v" KDELAY_VERSION)
want_rev=$(field "$tmp/v" KDELAY_REVISION)
want_schema=$(field "$tmp/v" KDELAY_SCHEMA)
rdkafka=$(pkg-config --modversion rdkafka)
for b in kdelay-forwarder kdelayctl; do
    out=$("$build/$b" --version) || fail "$b --version exited $?"
    expect "$b --version" "$out" \
        "$b $want_version commit=$want_rev schema=$want_schema librdkafka=$rdkafka"
    echo "check_version: $out"
done
