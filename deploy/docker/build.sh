#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# build.sh - the build steps of deploy/docker/Dockerfile, also run by the
# test suite (tests/unit/check_deploy.sh): configure (once), build and
# install kdelay into DESTDIR with prefix /usr/local and sysconfdir /etc.
# Usage: deploy/docker/build.sh BUILD_DIR DESTDIR [CMAKE_ARGS...]
set -euo pipefail
build=${1:?usage: build.sh BUILD_DIR DESTDIR [CMAKE_ARGS...]}
dest=${2:?usage: build.sh BUILD_DIR DESTDIR [CMAKE_ARGS...]}
shift 2
src=$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd -P)
if [ ! -f "$build/CMakeCache.txt" ]; then
    cmake -S "$src" -B "$build" -DCMAKE_BUILD_TYPE=Release \
        -DCMAKE_INSTALL_PREFIX=/usr/local -DCMAKE_INSTALL_SYSCONFDIR=/etc "$@" >/dev/null
fi
cmake --build "$build" -j "$(nproc 2>/dev/null || echo 2)" --target kdelayctl kdelay-forwarder kdelay >/dev/null
DESTDIR=$dest cmake --install "$build" >/dev/null
install -D -m 0755 "$src/deploy/docker/entrypoint.sh" "$dest/usr/local/bin/kdelay-entrypoint"
echo "build.sh: kdelay installed into $dest"
