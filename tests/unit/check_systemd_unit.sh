#!/usr/bin/env bash
# The forwarder's systemd unit is valid: systemd-analyze verify on an
# instance of it (kdelay-forwarder@ci.service) whose ExecStart names the
# built binary instead of the install path (verify checks it exists).
# Any line verify prints is a failure: it reports unknown keys and bad
# values as warnings and still exits 0.
# Usage: check_systemd_unit.sh UNIT FORWARDER_BINARY
set -euo pipefail
unit=${1:?usage: check_systemd_unit.sh UNIT FORWARDER_BINARY}
bin=${2:?usage: check_systemd_unit.sh UNIT FORWARDER_BINARY}
command -v systemd-analyze >/dev/null || { echo "check_systemd_unit: systemd-analyze missing (deploy/local/deps.sh)" >&2; exit 1; }
dir=$(mktemp -d)
trap 'rm -rf "$dir"' EXIT
sed "s#^ExecStart=[^ ]*#ExecStart=$bin#" "$unit" >"$dir/kdelay-forwarder@ci.service"
grep -q "^ExecStart=$bin " "$dir/kdelay-forwarder@ci.service"
out=$(systemd-analyze verify "$dir/kdelay-forwarder@ci.service" 2>&1) || {
    printf '%s\n' "$out" >&2
    exit 1
}
if [ -n "$out" ]; then
    printf 'check_systemd_unit: systemd-analyze verify warned:\n%s\n' "$out" >&2
    exit 1
fi
echo "check_systemd_unit: $unit verified (as kdelay-forwarder@ci.service)"
