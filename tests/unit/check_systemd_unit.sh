#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# The forwarder's systemd unit is valid: systemd-analyze verify on an
# instance of it (kdelay-forwarder@ci.service). Any line verify prints is
# a failure: it reports unknown keys and bad values as warnings and still
# exits 0. Then the command its ExecStart puts together (a shell: the
# optional options only when set) runs with a stand-in for the forwarder
# that prints its arguments: the instance name and static membership
# always; forwarder.http_listen from KDELAY_HTTP_LISTEN of the environment
# files; the MySQL password as a `file:` reference only when its
# credential is not the SetCredential= placeholder; KDELAY_FORWARDER_ARGS
# last; and never the password itself.
# Usage: check_systemd_unit.sh UNIT FORWARDER_BINARY
set -euo pipefail
unit=${1:?usage: check_systemd_unit.sh UNIT FORWARDER_BINARY}
bin=${2:?usage: check_systemd_unit.sh UNIT FORWARDER_BINARY}
command -v systemd-analyze >/dev/null || { echo "check_systemd_unit: systemd-analyze missing (deploy/local/deps.sh)" >&2; exit 1; }
[ -x "$bin" ] || { echo "check_systemd_unit: $bin is not executable" >&2; exit 1; }
dir=$(mktemp -d)
trap 'rm -rf "$dir"' EXIT
fail() { echo "check_systemd_unit: $*" >&2; exit 1; }
cp "$unit" "$dir/kdelay-forwarder@ci.service"
out=$(systemd-analyze verify "$dir/kdelay-forwarder@ci.service" 2>&1) || {
    printf '%s\n' "$out" >&2
    exit 1
}
if [ -n "$out" ]; then
    printf 'check_systemd_unit: systemd-analyze verify warned:\n%s\n' "$out" >&2
    exit 1
fi
for want in 'EnvironmentFile=-/etc/default/kdelay-forwarder' \
    'EnvironmentFile=-/etc/default/kdelay-forwarder-%i' \
    'SetCredential=mysql-password:kdelay-no-mysql-password-file'; do
    grep -qxF "$want" "$unit" || fail "no line $want"
done

# The stand-in prints one argument a line.
printf '#!/bin/sh\nfor a do printf "%%s\\n" "$a"; done\n' >"$dir/kdelay-forwarder"
chmod +x "$dir/kdelay-forwarder"
mkdir "$dir/creds"
run() { # ExecStart as systemd would run it for instance "ci"
    python3 - "$unit" "$dir/kdelay-forwarder" "$bin" <<'PY'
import os, re, shlex, subprocess, sys
unit, stub, real = sys.argv[1:4]
text = open(unit).read().replace("\\\n", " ")
line = [l for l in text.splitlines() if l.startswith("ExecStart=")]
assert len(line) == 1, "one ExecStart"
cmd = line[0][len("ExecStart="):]
assert not re.search(r"(?<!\$)\$(?!\$)", cmd.replace("$$", "")), "a $ systemd would expand"
argv = shlex.split(cmd.replace("$$", "$").replace("%i", "ci"))
assert os.path.basename(argv[-2]) == "kdelay-forwarder", argv[-2]
argv[-2] = stub
sys.stdout.write(subprocess.run(argv, check=True, capture_output=True, text=True).stdout)
PY
}
export CREDENTIALS_DIRECTORY=$dir/creds
printf 'kdelay-no-mysql-password-file' >"$dir/creds/mysql-password"
got=$(KDELAY_HTTP_LISTEN= KDELAY_FORWARDER_ARGS= run | tr '\n' ' ')
want="-c $dir/creds/kdelay.conf -X forwarder.instance=ci -X forwarder.static_membership=1 "
[ "$got" = "$want" ] || fail "without environment files or password: got '$got', want '$want'"
printf 's3cret pass\n' >"$dir/creds/mysql-password"
got=$(KDELAY_HTTP_LISTEN=127.0.0.1:9465 KDELAY_FORWARDER_ARGS='-X forwarder.delivery=exactly_once' run | tr '\n' ' ')
want="-c $dir/creds/kdelay.conf -X forwarder.instance=ci -X forwarder.static_membership=1 -X forwarder.http_listen=127.0.0.1:9465 -X mysql.password=file:$dir/creds/mysql-password -X forwarder.delivery=exactly_once "
[ "$got" = "$want" ] || fail "with an environment file and a password: got '$got', want '$want'"
case $got in *s3cret*) fail "the password is on the command line" ;; esac
echo "check_systemd_unit: $unit verified (as kdelay-forwarder@ci.service); its command with and without the optional settings as expected"
