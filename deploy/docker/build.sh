#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# build.sh - the build steps of deploy/docker/Dockerfile, also run by the
# test suite (tests/unit/lints/check_deploy.sh): configure (once), build and
# install kdelay into DESTDIR with prefix /usr/local and sysconfdir /etc.
# A fresh BUILD_DIR is configured Release (-Werror, the project's default)
# without the tests (BUILD_TESTING=OFF: no CUnit needed); CMAKE_ARGS come
# after and win. It builds only what `cmake --install` installs: the
# library (shared and static), the two binaries, the man pages and
# completions (clidoc) and the changelogs (changelog).
# Usage: deploy/docker/build.sh BUILD_DIR DESTDIR [CMAKE_ARGS...]
set -euo pipefail
build=${1:?usage: build.sh BUILD_DIR DESTDIR [CMAKE_ARGS...]}
dest=${2:?usage: build.sh BUILD_DIR DESTDIR [CMAKE_ARGS...]}
shift 2
src=$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd -P)
if [ ! -f "$build/CMakeCache.txt" ]; then
    cmake -S "$src" -B "$build" -DCMAKE_BUILD_TYPE=Release \
        -DCMAKE_INSTALL_PREFIX=/usr/local -DCMAKE_INSTALL_SYSCONFDIR=/etc -DBUILD_TESTING=OFF "$@" >/dev/null
fi
cmake --build "$build" -j "$(nproc 2>/dev/null || echo 2)" \
    --target kdelay kdelay_static kdelayctl kdelay-forwarder clidoc changelog >/dev/null
DESTDIR=$dest cmake --install "$build" >/dev/null
install -D -m 0755 "$src/deploy/docker/entrypoint.sh" "$dest/usr/local/bin/kdelay-entrypoint"
echo "build.sh: kdelay installed into $dest"
