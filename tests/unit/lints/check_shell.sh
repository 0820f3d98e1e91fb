#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# Every shell script of the repository passes `shellcheck -x` at the
# default severity (style and up): the files git knows (tracked, or new
# and not ignored) that are named *.sh or start with an sh or bash #!
# line, so a new script is checked without being listed anywhere. A
# deliberate idiom carries `# shellcheck disable=SCxxxx # why` on its line
# or the line before. Without git (a source copy), the same test on every
# file under SOURCE_DIR but build trees and dot folders other than .ci.
# Fails when shellcheck is missing (deploy/local/deps.sh --test).
# Usage: check_shell.sh SOURCE_DIR
set -euo pipefail
src=$(cd "${1:?usage: check_shell.sh SOURCE_DIR}" && pwd)
fail() { echo "check_shell: $*" >&2; exit 1; }
command -v shellcheck >/dev/null ||
    fail "shellcheck not installed (deploy/local/deps.sh --test installs it)"
cd "$src"

if [ "$(git rev-parse --show-toplevel 2>/dev/null)" = "$(pwd -P)" ]; then
    mapfile -d '' candidates < <(git ls-files -z --cached --others --exclude-standard)
else
    mapfile -d '' candidates < <(find . -type d \( -name 'build*' -o -name '.?*' ! -name .ci \
        -o -name node_modules -o -name target \) -prune -o -type f -printf '%P\0')
fi
is_shell() { # FILE: named *.sh, or an sh/bash/dash/ksh #! line
    case $1 in *.sh) return 0 ;; esac
    head -n 1 "$1" 2>/dev/null |
        grep -qE '^#![[:space:]]*[^[:space:]]*/(env[[:space:]]+)?(sh|bash|dash|ksh)([[:space:]]|$)'
}
scripts=()
for f in "${candidates[@]}"; do
    # (git lists a file deleted but not committed; links are their targets')
    if [ -f "$f" ] && [ ! -L "$f" ] && is_shell "$f"; then scripts+=("$f"); fi
done
((${#scripts[@]})) || fail "no shell script found under $src"

if ! out=$(shellcheck -x --severity=style "${scripts[@]}" 2>&1); then
    printf '%s\n' "$out" >&2
    n=$(grep -c '^In .* line [0-9]*:$' <<<"$out" || true)
    fail "$n finding(s) in ${#scripts[@]} shell scripts (above): fix them, or disable one deliberately with '# shellcheck disable=SCxxxx # why' on or before its line"
fi
echo "check_shell: ${#scripts[@]} shell scripts pass shellcheck -x ($(shellcheck --version | sed -n 's/^version: //p'))"
