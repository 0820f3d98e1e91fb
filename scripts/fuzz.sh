#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# Fuzzes the parsers of untrusted input (fuzz/fuzz_NAME.c, listed in
# fuzz/targets.cmake) with libFuzzer: installs clang and its libFuzzer
# runtime when missing (Debian bookworm), builds build/fuzz with
# -DKDELAY_FUZZ=ON and runs the chosen targets one after another, each for
# the time budget.
#
#   scripts/fuzz.sh [--target NAME|all] [SECONDS]   # default: all, 300 s each
#   scripts/fuzz.sh --list                          # the target names
#
# Targets: `scripts/fuzz.sh --list`. --target may be given more than
# once. Seeds come from fuzz/corpus/NAME (read only); what the fuzzer
# learns stays in build/fuzz/corpus/NAME. A crashing input is written to
# build/fuzz/crashers/NAME/; reproduce it with `build/fuzz/fuzz/fuzz_NAME
# FILE`, fix the bug and keep the input in fuzz/regress/NAME/ under a name
# saying what it broke (tests/unit/lib/test_fuzz_regress_NAME replays it in
# every build). KDELAY_FUZZ_JOBS sets the build's parallelism (default 1).
set -euo pipefail

root=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
cd "$root"
log() { printf 'ts=%s level=info prog=fuzz.sh %s\n' "$(date -u +%FT%TZ)" "$*" >&2; }
usage() {
  echo "usage: scripts/fuzz.sh [--target NAME|all]... [SECONDS] | --list" >&2
  exit 2
}

# The one list of targets: fuzz/targets.cmake.
all=$(sed -n 's/^set(KD_FUZZ_TARGETS \(.*\))$/\1/p' fuzz/targets.cmake)
[ -n "$all" ] || { echo "fuzz.sh: no KD_FUZZ_TARGETS in fuzz/targets.cmake" >&2; exit 1; }
read -ra all_targets <<<"$all"

targets=()
budget=300
while [ $# -gt 0 ]; do
  case $1 in
    --list) printf '%s\n' "${all_targets[@]}"; exit 0 ;;
    --target) [ $# -ge 2 ] || usage; targets+=("$2"); shift 2 ;;
    --target=*) targets+=("${1#--target=}"); shift ;;
    -h | --help) usage ;;
    '' | *[!0-9]*) usage ;;
    *) budget=$1; shift; [ $# -eq 0 ] || usage ;;
  esac
done
[ ${#targets[@]} -gt 0 ] || targets=(all)
run=()
for t in "${targets[@]}"; do
  if [ "$t" = all ]; then
    run+=("${all_targets[@]}")
  elif [[ " $all " == *" $t "* ]]; then
    run+=("$t")
  else
    echo "fuzz.sh: unknown target \"$t\" (targets: $all)" >&2
    exit 2
  fi
done

# The build needs the project's dependencies, clang and its libFuzzer
# runtime (Debian: clang and libclang-rt-14-dev).
deploy/local/deps.sh
if ! command -v clang >/dev/null ||
  [ ! -e "$(clang -print-file-name=libclang_rt.fuzzer-x86_64.a)" ]; then
  log event=install what="clang libclang-rt-14-dev"
  sudo=""
  [ "$(id -u)" -ne 0 ] && sudo=sudo
  $sudo apt-get update
  DEBIAN_FRONTEND=noninteractive $sudo apt-get install -y \
    --no-install-recommends clang libclang-rt-14-dev
fi

dir=build/fuzz
log event=build dir=$dir targets="${run[*]}"
CC=clang cmake -S . -B $dir -DKDELAY_FUZZ=ON -DCMAKE_BUILD_TYPE=RelWithDebInfo \
  -DBUILD_TESTING=OFF >/dev/null
for t in "${run[@]}"; do
  cmake --build $dir --target "fuzz_$t" -j "${KDELAY_FUZZ_JOBS:-1}" >/dev/null
done

export UBSAN_OPTIONS="print_stacktrace=1:halt_on_error=1"
# Leaks inside libraries we cannot fix (fuzz/lsan.supp says which).
export LSAN_OPTIONS="suppressions=$root/fuzz/lsan.supp:print_suppressions=0"
rc=0
for t in "${run[@]}"; do
  mkdir -p "$dir/corpus/$t" "$dir/crashers/$t"
  dict=()
  [ -f "fuzz/fuzz_$t.dict" ] && dict=(-dict="fuzz/fuzz_$t.dict")
  log event=fuzz target="$t" seconds="$budget" corpus="$dir/corpus/$t" \
    seeds="fuzz/corpus/$t"
  trc=0
  "$dir/fuzz/fuzz_$t" -max_total_time="$budget" -print_final_stats=1 \
    -artifact_prefix="$dir/crashers/$t/" -max_len=4096 ${dict[@]+"${dict[@]}"} \
    "$dir/corpus/$t" "fuzz/corpus/$t" || trc=$?
  if [ "$trc" -ne 0 ]; then
    log event=crash target="$t" rc=$trc crashers="$dir/crashers/$t"
    ls -l "$dir/crashers/$t" >&2
    rc=$trc
  fi
done
exit $rc
