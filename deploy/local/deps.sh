#!/usr/bin/env bash
# deps.sh - install the Debian (bookworm) packages needed to build and test
# kdelay and to run the local dev/test stack (deploy/local/stack.sh).
#
# Packages that are already installed are skipped; apt-get is only called
# when something is missing, so a warm machine returns immediately.
set -euo pipefail

PROG=${0##*/}

PACKAGES=(
    # build
    build-essential cmake pkg-config
    librdkafka-dev default-libmysqlclient-dev libcjson-dev libconfig-dev
    libmicrohttpd-dev libsystemd-dev
    # tests and tooling (promtool: the prometheus package; systemd-analyze)
    libcunit1-dev clang-format valgrind prometheus systemd
    python3-yaml
    # the generated man pages and shell completions (check_clidoc)
    groff-base man-db zsh
    # the producer examples run by test_producers (python; java is built with maven)
    python3-confluent-kafka openjdk-17-jdk-headless
    # local stack (stack.sh)
    mariadb-server mariadb-client openjdk-17-jre-headless maven kafkacat curl
)

log() { printf '%s: %s\n' "$PROG" "$*" >&2; }
die() { log "error: $*"; exit 1; }

usage() {
    cat <<EOF
Usage: deploy/local/deps.sh [--check] [--list] [--help]

Installs with apt-get every Debian bookworm package that the kdelay build,
the tests and the local stack need (runs 'apt-get update' first, uses sudo
when not root). Already installed packages are skipped.

  --check   only report missing packages; exit 1 if any are missing
  --list    print the package list and exit
  -h, --help  show this help
EOF
}

check_only=0
while (($#)); do
    case $1 in
        -h | --help) usage; exit 0 ;;
        --check) check_only=1 ;;
        --list) printf '%s\n' "${PACKAGES[@]}"; exit 0 ;;
        *) usage >&2; die "unknown argument: $1" ;;
    esac
    shift
done

command -v dpkg-query >/dev/null 2>&1 || die "dpkg-query not found: this script needs Debian/Ubuntu (bookworm)"

# One dpkg-query call for all packages; unknown packages produce no line.
declare -A installed=()
while read -r name status; do
    [[ $status == installed ]] && installed[$name]=1
done < <(dpkg-query -W -f='${Package} ${db:Status-Status}\n' "${PACKAGES[@]}" 2>/dev/null || true)

missing=()
for p in "${PACKAGES[@]}"; do
    [[ -n ${installed[$p]:-} ]] || missing+=("$p")
done

if ((${#missing[@]} == 0)); then
    log "all ${#PACKAGES[@]} packages are installed"
    exit 0
fi

log "missing packages: ${missing[*]}"
((check_only == 0)) || exit 1

SUDO=()
if ((EUID != 0)); then
    command -v sudo >/dev/null 2>&1 || die "not root and sudo is not installed; run as root: apt-get install ${missing[*]}"
    SUDO=(sudo)
fi

# Slim Debian images exclude /usr/share/man; the openjdk postinst then fails
# when update-alternatives tries to create man page links there.
if [[ ! -d /usr/share/man/man1 ]]; then
    "${SUDO[@]}" mkdir -p /usr/share/man/man1
fi

log "running apt-get update"
"${SUDO[@]}" env DEBIAN_FRONTEND=noninteractive apt-get update -q
log "installing: ${missing[*]}"
"${SUDO[@]}" env DEBIAN_FRONTEND=noninteractive apt-get install -y -q "${missing[@]}"
log "done"
