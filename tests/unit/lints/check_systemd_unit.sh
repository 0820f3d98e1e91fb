#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# The systemd units are valid: systemd-analyze verify on an instance of the
# forwarder's (kdelay-forwarder@ci.service), on it with the Kafka
# credentials drop-in (kafka-credentials.conf, every line of it on), and on
# kdelay-gc.service with kdelay-gc.timer. Any line verify prints is a
# failure: it reports unknown keys and bad values as warnings and still
# exits 0. The forwarder is not restarted after exit 2 (configuration) or
# 6 (forwarder.http_listen taken); the timer is daily, randomized,
# persistent. Then the command each ExecStart puts together (a shell: the
# optional options only when set) runs with a stand-in for the binary
# that prints its arguments: the instance name and static membership
# always; forwarder.http_listen from KDELAY_HTTP_LISTEN of the environment
# files; the MySQL password as a `file:` reference only when its
# credential is not the SetCredential= placeholder; each Kafka secret
# credential the drop-in loads as a reference (sasl.password=file:,
# ssl.key.location=, ssl.key.password=file:) only when it is there;
# KDELAY_FORWARDER_ARGS last; and never a secret itself. The same for
# kdelay-gc.service's `db gc` and KDELAY_GC_ARGS.
# Usage: check_systemd_unit.sh UNIT FORWARDER_BINARY KDELAYCTL_BINARY
#   (kdelay-gc.service, kdelay-gc.timer and kafka-credentials.conf are
#   taken from UNIT's directory)
set -euo pipefail
usage="usage: check_systemd_unit.sh UNIT FORWARDER_BINARY KDELAYCTL_BINARY"
unit=${1:?$usage}
bin=${2:?$usage}
ctlbin=${3:?$usage}
udir=$(dirname "$unit")
command -v systemd-analyze >/dev/null || { echo "check_systemd_unit: systemd-analyze missing (deploy/local/deps.sh)" >&2; exit 1; }
for b in "$bin" "$ctlbin"; do
    [ -x "$b" ] || { echo "check_systemd_unit: $b is not executable" >&2; exit 1; }
done
dir=$(mktemp -d)
trap 'rm -rf "$dir"' EXIT
fail() { echo "check_systemd_unit: $*" >&2; exit 1; }
verify() { # DIR UNIT...: systemd-analyze verify, silent or a failure
    local d=$1 out
    shift
    out=$(cd "$d" && systemd-analyze verify "$@" 2>&1) || {
        printf '%s\n' "$out" >&2
        fail "systemd-analyze verify $* failed"
    }
    if [ -n "$out" ]; then
        printf 'check_systemd_unit: systemd-analyze verify %s warned:\n%s\n' "$*" "$out" >&2
        exit 1
    fi
}
mkdir "$dir/units" "$dir/dropin"
cp "$unit" "$dir/units/kdelay-forwarder@ci.service"
verify "$dir/units" kdelay-forwarder@ci.service
for want in 'EnvironmentFile=-/etc/default/kdelay-forwarder' \
    'EnvironmentFile=-/etc/default/kdelay-forwarder-%i' \
    'SetCredential=mysql-password:kdelay-no-mysql-password-file' \
    'Restart=on-failure' 'RestartPreventExitStatus=2 6'; do
    grep -qxF "$want" "$unit" || fail "no line $want"
done
# The drop-in, every LoadCredential= of it on: verify reads it (a key it
# does not know, planted next to it, warns: the drop-in was read).
dropin=$udir/kafka-credentials.conf
[ -f "$dropin" ] || fail "$dropin missing"
cp "$unit" "$dir/dropin/kdelay-forwarder@ci.service"
mkdir "$dir/dropin/kdelay-forwarder@ci.service.d"
sed 's/^#LoadCredential=/LoadCredential=/' "$dropin" >"$dir/dropin/kdelay-forwarder@ci.service.d/kafka-credentials.conf"
n=$(grep -c '^LoadCredential=kafka-[a-z.-]*:.*/kdelay/%i/kafka-' "$dir/dropin/kdelay-forwarder@ci.service.d/kafka-credentials.conf")
[ "$n" = 3 ] || fail "the drop-in has $n per-instance Kafka credentials, want 3"
verify "$dir/dropin" kdelay-forwarder@ci.service
printf '[Service]\nNoSuchKey=1\n' >"$dir/dropin/kdelay-forwarder@ci.service.d/zz-probe.conf"
out=$({ cd "$dir/dropin" && systemd-analyze verify kdelay-forwarder@ci.service 2>&1; } || true)
case $out in *NoSuchKey*) ;; *) fail "verify did not read the drop-in directory (got: $out)" ;; esac
rm "$dir/dropin/kdelay-forwarder@ci.service.d/zz-probe.conf"
# kdelay-gc.service and its timer.
for f in kdelay-gc.service kdelay-gc.timer; do
    [ -f "$udir/$f" ] || fail "$udir/$f missing"
    cp "$udir/$f" "$dir/units/$f"
done
verify "$dir/units" kdelay-gc.service kdelay-gc.timer
for want in 'Type=oneshot' 'DynamicUser=yes' 'EnvironmentFile=-/etc/default/kdelay-gc' \
    'SetCredential=mysql-password:kdelay-no-mysql-password-file'; do
    grep -qxF "$want" "$udir/kdelay-gc.service" || fail "kdelay-gc.service: no line $want"
done
grep -qE '^LoadCredential=mysql-password:.*/kdelay/gc-mysql-password$' "$udir/kdelay-gc.service" ||
    fail "kdelay-gc.service: no LoadCredential= of the gc password"
for want in 'OnCalendar=daily' 'Persistent=true' 'WantedBy=timers.target'; do
    grep -qxF "$want" "$udir/kdelay-gc.timer" || fail "kdelay-gc.timer: no line $want"
done
grep -qE '^RandomizedDelaySec=[1-9]' "$udir/kdelay-gc.timer" || fail "kdelay-gc.timer: no RandomizedDelaySec="
next=$(systemd-analyze calendar daily 2>&1 | sed -n 's/^ *Normalized form: //p')
[ "$next" = "*-*-* 00:00:00" ] || fail "OnCalendar=daily normalized to '$next'"

# The stand-ins print one argument a line.
mkdir "$dir/bin"
for b in kdelay-forwarder kdelayctl; do
    # shellcheck disable=SC2016 # the stand-in's own "$a"
    printf '#!/bin/sh\nfor a do printf "%%s\\n" "$a"; done\n' >"$dir/bin/$b"
    chmod +x "$dir/bin/$b"
done
mkdir "$dir/creds"
run() { # UNIT: its ExecStart as systemd would run it for instance "ci"
    python3 - "$1" "$dir/bin" <<'PY'
import os, re, shlex, subprocess, sys
unit, stubs = sys.argv[1:3]
text = open(unit).read().replace("\\\n", " ")
line = [l for l in text.splitlines() if l.startswith("ExecStart=")]
assert len(line) == 1, "one ExecStart"
cmd = line[0][len("ExecStart="):]
assert not re.search(r"(?<!\$)\$(?!\$)", cmd.replace("$$", "")), "a $ systemd would expand"
argv = shlex.split(cmd.replace("$$", "$").replace("%i", "ci"))
name = os.path.basename(argv[-1] if argv[-1] != "ci" else argv[-2])
assert name in ("kdelay-forwarder", "kdelayctl"), name
i = -1 if argv[-1] != "ci" else -2
argv[i] = os.path.join(stubs, name)
sys.stdout.write(subprocess.run(argv, check=True, capture_output=True, text=True).stdout)
PY
}
export CREDENTIALS_DIRECTORY=$dir/creds
c=$dir/creds
printf 'kdelay-no-mysql-password-file' >"$c/mysql-password"
got=$(KDELAY_HTTP_LISTEN='' KDELAY_FORWARDER_ARGS='' run "$unit" | tr '\n' ' ')
want="-c $c/kdelay.conf -X forwarder.instance=ci -X forwarder.static_membership=1 "
[ "$got" = "$want" ] || fail "without environment files or password: got '$got', want '$want'"
printf 's3cret pass\n' >"$c/mysql-password"
got=$(KDELAY_HTTP_LISTEN=127.0.0.1:9465 KDELAY_FORWARDER_ARGS='-X forwarder.delivery=exactly_once' run "$unit" | tr '\n' ' ')
want="-c $c/kdelay.conf -X forwarder.instance=ci -X forwarder.static_membership=1 -X forwarder.http_listen=127.0.0.1:9465 -X mysql.password=file:$c/mysql-password -X forwarder.delivery=exactly_once "
[ "$got" = "$want" ] || fail "with an environment file and a password: got '$got', want '$want'"
case $got in *s3cret*) fail "the password is on the command line" ;; esac
# The Kafka secrets the drop-in loads: each as a reference, only when there.
printf 'kafka s3cret\n' >"$c/kafka-password"
got=$(KDELAY_HTTP_LISTEN='' KDELAY_FORWARDER_ARGS='' run "$unit" | tr '\n' ' ')
want="-c $c/kdelay.conf -X forwarder.instance=ci -X forwarder.static_membership=1 -X mysql.password=file:$c/mysql-password -X sasl.password=file:$c/kafka-password "
[ "$got" = "$want" ] || fail "with a Kafka password credential: got '$got', want '$want'"
printf -- '-----BEGIN PRIVATE KEY-----\nkeyS3cret\n-----END PRIVATE KEY-----\n' >"$c/kafka-client.key"
printf 'keypassS3cret\n' >"$c/kafka-client-key-password"
rm "$c/kafka-password"
got=$(KDELAY_HTTP_LISTEN='' KDELAY_FORWARDER_ARGS='-X forwarder.delivery=exactly_once' run "$unit" | tr '\n' ' ')
want="-c $c/kdelay.conf -X forwarder.instance=ci -X forwarder.static_membership=1 -X mysql.password=file:$c/mysql-password -X ssl.key.location=$c/kafka-client.key -X ssl.key.password=file:$c/kafka-client-key-password -X forwarder.delivery=exactly_once "
[ "$got" = "$want" ] || fail "with an mTLS key and its password as credentials: got '$got', want '$want'"
case $got in *S3cret* | *s3cret*) fail "a Kafka secret is on the command line" ;; esac
# kdelay-gc.service: db gc, the password as a reference, KDELAY_GC_ARGS.
printf 'kdelay-no-mysql-password-file' >"$c/mysql-password"
got=$(KDELAY_GC_ARGS='' run "$udir/kdelay-gc.service" | tr '\n' ' ')
want="db gc -c $c/kdelay.conf "
[ "$got" = "$want" ] || fail "kdelay-gc.service without password: got '$got', want '$want'"
printf 'gc s3cret\n' >"$c/mysql-password"
got=$(KDELAY_GC_ARGS='--older-than 45d --pause 2' run "$udir/kdelay-gc.service" | tr '\n' ' ')
want="db gc -c $c/kdelay.conf -X mysql.password=file:$c/mysql-password --older-than 45d --pause 2 "
[ "$got" = "$want" ] || fail "kdelay-gc.service with a password and KDELAY_GC_ARGS: got '$got', want '$want'"
case $got in *s3cret*) fail "the gc password is on the command line" ;; esac
# The real binaries: the gc unit's command line is one kdelayctl takes;
# the references as systemd's credentials are (mode 0400) are read.
# Captured, then searched: grep -q stops reading at its match, and a help
# longer than a pipe write (4,683 bytes) then dies of SIGPIPE, which
# pipefail reports as a failure (seen: 2 runs of 3).
gc_help=$("$ctlbin" db gc --help) || fail "kdelayctl db gc --help: exit $?"
grep -q -- '--older-than' <<<"$gc_help" || fail "kdelayctl db gc --help"
printf 'kafka s3cret\n' >"$c/kafka-password"
chmod 400 "$c"/*
out=$("$ctlbin" tiers plan -c /dev/null -X "sasl.password=file:$c/kafka-password" \
    -X "ssl.key.password=file:$c/kafka-client-key-password" 2>&1) ||
    fail "kdelayctl with the credentials' references: $out"
case $out in *s3cret* | *S3cret*) fail "a secret in kdelayctl's output" ;; esac
echo "check_systemd_unit: $unit verified (kdelay-forwarder@ci.service, and with the Kafka credentials drop-in), kdelay-gc.service and kdelay-gc.timer verified; their commands with and without the optional settings as expected, no secret on them"
