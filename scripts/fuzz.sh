#!/usr/bin/env bash
# Fuzzes the parsers of untrusted input (fuzz/fuzz_wire.c) with libFuzzer:
# installs clang when missing (Debian bookworm), builds build/fuzz with
# -DKDELAY_FUZZ=ON and runs fuzz_wire for a time budget.
#
#   scripts/fuzz.sh [SECONDS]      # default 300
#
# Seeds come from fuzz/corpus (read only); what the fuzzer learns stays in
# build/fuzz/corpus. A crashing input is written to build/fuzz/crashers/;
# reproduce it with `build/fuzz/fuzz/fuzz_wire FILE`, fix the bug and keep
# the input in fuzz/regress/ under a name saying what it broke
# (tests/unit/test_fuzz_regress replays it in every build).
set -euo pipefail

budget=${1:-300}
case $budget in
  '' | *[!0-9]*) echo "usage: scripts/fuzz.sh [SECONDS]" >&2; exit 2 ;;
esac
root=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
cd "$root"
log() { printf 'ts=%s level=info prog=fuzz.sh %s\n' "$(date -u +%FT%TZ)" "$*" >&2; }

# The build needs the project's dependencies and clang with its libFuzzer
# runtime (Debian's clang package ships it).
deploy/local/deps.sh
if ! command -v clang >/dev/null; then
  log event=install what=clang
  sudo=""
  [ "$(id -u)" -ne 0 ] && sudo=sudo
  $sudo apt-get update
  DEBIAN_FRONTEND=noninteractive $sudo apt-get install -y --no-install-recommends clang
fi

dir=build/fuzz
log event=build dir=$dir
CC=clang cmake -S . -B $dir -DKDELAY_FUZZ=ON -DCMAKE_BUILD_TYPE=RelWithDebInfo \
  -DBUILD_TESTING=OFF >/dev/null
cmake --build $dir --target fuzz_wire -j "${KDELAY_FUZZ_JOBS:-1}" >/dev/null

mkdir -p $dir/corpus $dir/crashers
log event=fuzz seconds="$budget" corpus=$dir/corpus seeds=fuzz/corpus
export UBSAN_OPTIONS="print_stacktrace=1:halt_on_error=1"
rc=0
$dir/fuzz/fuzz_wire -max_total_time="$budget" -print_final_stats=1 \
  -artifact_prefix=$dir/crashers/ -max_len=4096 -dict=fuzz/fuzz_wire.dict \
  $dir/corpus fuzz/corpus || rc=$?
if [ "$rc" -ne 0 ]; then
  log event=crash rc=$rc crashers=$dir/crashers
  ls -l $dir/crashers >&2
fi
exit $rc
