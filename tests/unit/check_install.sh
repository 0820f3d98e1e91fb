#!/usr/bin/env bash
# The install tree as a package would lay it out (DESTDIR): the binaries,
# and the configuration file with mode 0640 (it may hold secrets).
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
echo "check_install: kdelay.conf installed with mode $mode, binaries present"
