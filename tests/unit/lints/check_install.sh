#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# The install tree as a package would lay it out (DESTDIR): the binaries,
# and the configuration file with mode 0640 (it may hold secrets). And
# `cmake --install --prefix P` into an empty directory writes only under P,
# the man pages and shell completions among them.
# Usage: check_install.sh BUILD_DIR SYSCONFDIR
set -euo pipefail
build=${1:?usage: check_install.sh BUILD_DIR SYSCONFDIR}
sysconf=${2:?usage: check_install.sh BUILD_DIR SYSCONFDIR}
dir=$(mktemp -d)
trap 'rm -rf "$dir"' EXIT
DESTDIR=$dir cmake --install "$build" >"$dir.log" 2>&1 || { cat "$dir.log" >&2; rm -f "$dir.log"; exit 1; }
rm -f "$dir.log"
conf=$dir$sysconf/kdelay/kdelay.conf
[ -f "$conf" ] || { echo "check_install: $conf missing" >&2; exit 1; }
mode=$(stat -c %a "$conf")
[ "$mode" = 640 ] || { echo "check_install: $conf has mode $mode, want 640" >&2; exit 1; }
for b in kdelayctl kdelay-forwarder; do
  find "$dir" -name "$b" -type f -perm -u+x | grep -q . || { echo "check_install: $b not installed" >&2; exit 1; }
done
prefix=$(mktemp -d)
trap 'rm -rf "$dir" "$prefix"' EXIT
out=$(cmake --install "$build" --prefix "$prefix/p" 2>&1) || { printf '%s\n' "$out" >&2; exit 1; }
outside=$(printf '%s\n' "$out" | sed -n 's/^-- \(Installing\|Up-to-date\): //p' | grep -v "^$prefix/p/" || true)
[ -z "$outside" ] || { printf 'check_install: --prefix %s wrote outside it:\n%s\n' "$prefix/p" "$outside" >&2; exit 1; }
n=$(printf '%s\n' "$out" | grep -c '^-- Installing: ' || true)
for u in kdelay-forwarder@.service kdelay-gc.service kdelay-gc.timer; do
  [ -f "$prefix/p/lib/systemd/system/$u" ] || { echo "check_install: the systemd unit $u is not under the prefix" >&2; exit 1; }
done
[ -f "$prefix/p/share/doc/kdelay/examples/systemd/kafka-credentials.conf" ] ||
  { echo "check_install: the Kafka credentials drop-in is not in the documentation" >&2; exit 1; }
for f in share/man/man1/kdelayctl.1.gz share/man/man5/kdelay.conf.5.gz \
  share/man/man8/kdelay-forwarder.8.gz share/bash-completion/completions/kdelayctl \
  share/zsh/site-functions/_kdelayctl; do
  [ -s "$prefix/p/$f" ] || { echo "check_install: $f is not installed under the prefix" >&2; exit 1; }
done
echo "check_install: kdelay.conf installed with mode $mode, binaries present; --prefix: $n files, all under it, man pages, completions, the systemd units (kdelay-gc.timer too) and the credentials drop-in among them"
