#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# deps.sh - install the Debian (bookworm) packages kdelay needs, by group:
# --run (the libraries the binaries link), --build (compiler, -dev
# packages), --stack (the local dev/test stack, deploy/local/stack.sh),
# --test (everything scripts/test.sh uses: all groups plus the test tools).
#
# Packages that are already installed are skipped; apt-get is only called
# when something is missing, so a warm machine returns immediately.
# apt-get runs with --no-install-recommends, and no service starts or
# stays enabled because of it (see "Services" in deploy/local/README.md).
set -euo pipefail

PROG=${0##*/}

# What kdelay-forwarder, kdelayctl and libkdelay.so link (objdump -p:
# NEEDED), libc aside. The .deb's Depends (dpkg-shlibdeps) name the same.
RUN_PACKAGES=(librdkafka1 libmariadb3 libcjson1 libconfig9 libmicrohttpd12 libsystemd0
    libjemalloc2)
# cmake, the compiler, the headers; build-essential brings dpkg-dev,
# whose dpkg-shlibdeps `cpack -G DEB` runs.
BUILD_PACKAGES=(
    build-essential cmake pkg-config
    librdkafka-dev default-libmysqlclient-dev libcjson-dev libconfig-dev
    libmicrohttpd-dev libsystemd-dev libjemalloc-dev
)
# stack.sh: Kafka (a JRE; Maven fetches its jars), a private mariadbd
# (mariadb-server-core: the binaries without the system service),
# kcat for its readiness checks, openssl for the TLS stacks.
STACK_PACKAGES=(
    openjdk-17-jre-headless maven mariadb-server-core mariadb-client
    kafkacat curl openssl
)
# The suite's own tools, on top of the three groups above.
TEST_PACKAGES=(
    # unit tests, formatting, memory checks, promtool and the Prometheus
    # server (check_alert_rules runs both; the prometheus package),
    # systemd-analyze, the deploy files' YAML
    libcunit1-dev clang-format valgrind prometheus systemd python3-yaml
    # the shell scripts' lint (check_shell)
    shellcheck
    # the generated man pages and shell completions (check_clidoc)
    groff-base man-db zsh
    # the client examples run by test_producers and test_clients (python:
    # Kafka and MySQL drivers; java is built with maven; node below)
    python3-confluent-kafka python3-pymysql openjdk-17-jdk-headless
    # check_deb: a fresh bookworm root to install the .deb into;
    # check_compose: the image built and the compose stack run for real
    # (a Docker daemon the check starts when none runs, Compose v1, the
    # Debian base images made by mmdebstrap)
    mmdebstrap docker.io docker-compose
    # check_deb: lintian on the .deb (no copyright or licence tag)
    lintian
    # tools/sqlcheck and examples/node (packages from npm): node and npm, added below
    # only when missing, since a NodeSource nodejs holds npm itself and
    # conflicts with Debian's npm package
)

log() { printf 'ts=%s level=info prog=%s %s\n' "$(date -u +%FT%TZ)" "$PROG" "$*" >&2; }
die() {
    printf 'ts=%s level=error prog=%s %s\n' "$(date -u +%FT%TZ)" "$PROG" "$*" >&2
    exit 1
}

usage() {
    cat <<EOF
Usage: deploy/local/deps.sh [--run] [--build] [--stack] [--test] [--check] [--list] [--help]

Installs with apt-get (--no-install-recommends) the Debian bookworm
packages of the groups asked for, skipping those already installed (runs
'apt-get update' first, uses sudo when not root). Groups add up:

  --run     the libraries kdelay-forwarder, kdelayctl and libkdelay link
            (${RUN_PACKAGES[*]})
  --build   what building kdelay needs (compiler, cmake, -dev packages)
  --stack   what deploy/local/stack.sh runs: a JRE and Maven (Kafka),
            mariadb-server-core (a private mariadbd, no system service),
            mariadb-client, kcat, curl, openssl
  --test    everything scripts/test.sh uses: --run --build --stack and the
            test tools (CUnit, clang-format, shellcheck, valgrind, promtool,
            systemd-analyze, man, zsh, the examples' Python and JDK,
            mmdebstrap, docker.io and docker-compose; nodejs and npm when
            node or npm is missing)
  (none)    the same as --test

No service is started by the install (a temporary /usr/sbin/policy-rc.d
answers 101 while apt-get runs, unless one exists), and systemd units the
install enabled are disabled again (systemctl --no-reload disable).

  --check   only report missing packages; exit 1 if any are missing
  --list    print the selected packages and exit
  -h, --help  show this help

scripts/demo.sh runs '--build --run --stack', scripts/test.sh '--test'.
EOF
}

check_only=0
list_only=0
declare -A want=()
while (($#)); do
    case $1 in
        -h | --help) usage; exit 0 ;;
        --run | --build | --stack | --test) want[${1#--}]=1 ;;
        --check) check_only=1 ;;
        --list) list_only=1 ;;
        *) usage >&2; die "event=bad_argument arg=$1" ;;
    esac
    shift
done
((${#want[@]})) || want[test]=1
if [[ -n ${want[test]:-} ]]; then
    want[run]=1 want[build]=1 want[stack]=1
fi

PACKAGES=()
groups=()
for g in run build stack test; do
    [[ -n ${want[$g]:-} ]] || continue
    groups+=("$g")
    case $g in
        run) PACKAGES+=("${RUN_PACKAGES[@]}") ;;
        build) PACKAGES+=("${BUILD_PACKAGES[@]}") ;;
        stack) PACKAGES+=("${STACK_PACKAGES[@]}") ;;
        test) PACKAGES+=("${TEST_PACKAGES[@]}") ;;
    esac
done
if ((list_only)); then
    printf '%s\n' "${PACKAGES[@]}"
    exit 0
fi
group_list=$(IFS=,; echo "${groups[*]}")

command -v dpkg-query >/dev/null 2>&1 || die "event=no_dpkg msg=\"this script needs Debian/Ubuntu (bookworm)\""

# One dpkg-query call for all packages; unknown packages produce no line.
declare -A installed=()
while read -r name status; do
    [[ $status == installed ]] && installed[$name]=1
done <<<"$(dpkg-query -W -f='${Package} ${db:Status-Status}\n' "${PACKAGES[@]}" 2>/dev/null || true)"

missing=()
for p in "${PACKAGES[@]}"; do
    [[ -n ${installed[$p]:-} ]] || missing+=("$p")
done
if [[ -n ${want[test]:-} ]]; then
    command -v node >/dev/null 2>&1 || missing+=(nodejs)
    command -v npm >/dev/null 2>&1 || missing+=(npm)
fi

if ((${#missing[@]} == 0)); then
    log "event=ready groups=$group_list packages=${#PACKAGES[@]}"
    exit 0
fi

log "event=missing groups=$group_list count=${#missing[@]} packages=$(IFS=,; echo "${missing[*]}")"
((check_only == 0)) || exit 1

SUDO=()
if ((EUID != 0)); then
    command -v sudo >/dev/null 2>&1 || die "event=no_sudo msg=\"not root and sudo is not installed; run as root: apt-get install --no-install-recommends ${missing[*]}\""
    SUDO=(sudo)
fi

# Slim Debian images exclude /usr/share/man; the openjdk postinst then fails
# when update-alternatives tries to create man page links there.
if [[ ! -d /usr/share/man/man1 ]]; then
    "${SUDO[@]}" mkdir -p /usr/share/man/man1
fi

# No service starts while apt-get runs: invoke-rc.d and deb-systemd-invoke
# ask /usr/sbin/policy-rc.d, and 101 means "action forbidden". Ours is
# removed afterwards; one that was there already (a container's, a
# chroot builder's) is left alone.
policy=/usr/sbin/policy-rc.d
own_policy=0
cleanup() {
    if ((own_policy)); then
        "${SUDO[@]}" rm -f "$policy"
        log "event=policy_rc_d_removed path=$policy"
    fi
}
trap cleanup EXIT
if [[ ! -e $policy ]]; then
    own_policy=1
    printf '#!/bin/sh\n# deploy/local/deps.sh: no service starts while it installs packages\nexit 101\n' |
        "${SUDO[@]}" tee "$policy" >/dev/null
    "${SUDO[@]}" chmod 755 "$policy"
    log "event=policy_rc_d_created path=$policy"
fi

# A package's postinst still enables its units (deb-systemd-helper
# enable: links in /etc/systemd/system/*.wants/), which would start them
# at the next boot. The links that appear during our install are undone
# with `systemctl disable`, which later upgrades respect.
wants_links() {
    find /etc/systemd/system -mindepth 2 -maxdepth 2 -path '*.wants/*' -type l 2>/dev/null | sort
}
before=$(wants_links)

log "event=apt_update"
"${SUDO[@]}" env DEBIAN_FRONTEND=noninteractive apt-get update -q
log "event=apt_install groups=$group_list packages=$(IFS=,; echo "${missing[*]}")"
"${SUDO[@]}" env DEBIAN_FRONTEND=noninteractive apt-get install -y -q --no-install-recommends "${missing[@]}"

# (no process substitution: a chroot without /proc has no /dev/fd)
enabled=$(wants_links | grep -vxF -e "$before" -e '' | sed 's#.*/##' | sort -u || true)
if [[ -n $enabled ]]; then
    if command -v systemctl >/dev/null 2>&1; then
        for unit in $enabled; do
            "${SUDO[@]}" systemctl --no-reload disable "$unit" >/dev/null 2>&1 ||
                die "event=disable_failed unit=$unit"
            log "event=unit_disabled unit=$unit"
        done
    else
        log "event=units_enabled units=$(printf '%s' "$enabled" | tr '\n' ,) msg=\"no systemctl to disable them\""
    fi
fi
log "event=done groups=$group_list installed=${#missing[@]}"
