#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# base-images.sh - make the Debian base images deploy/docker/Dockerfile and
# the stand-in images (deploy/docker/standin/) start FROM, without an image
# registry: debian:bookworm and debian:bookworm-slim, each a minbase
# bookworm root made by mmdebstrap from the Debian mirror and loaded with
# `docker import`. Where Docker Hub is reachable this is not needed (the
# official images have the same names).
#
#   deploy/docker/base-images.sh          # as root (mmdebstrap, docker)
#
# bookworm-slim is the same root without man pages, docs and locales
# (and dpkg told to leave them out), as the official slim image is made.
# The roots are cached as tarballs in
# ${XDG_CACHE_HOME:-~/.cache}/kdelay/docker-base-<hash>/, the hash taken
# over this script (which fixes suite, variant, mirror and excludes): a
# second run, or another machine sharing the cache, only imports them.
# An image already loaded with the same hash (its label
# io.kdelay.base-hash) is left alone. KDELAY_DEBIAN_MIRROR overrides the
# mirror (default http://deb.debian.org/debian; it also becomes the
# image's apt source).
set -euo pipefail

PROG=base-images.sh
log() { printf 'ts=%s level=info prog=%s %s\n' "$(date -u +%FT%TZ)" "$PROG" "$*" >&2; }
die() {
    printf 'ts=%s level=error prog=%s %s\n' "$(date -u +%FT%TZ)" "$PROG" "$*" >&2
    exit 1
}

case ${1:-} in
    -h | --help) sed -n '3,21p' "$0" | sed 's/^# \{0,1\}//'; exit 0 ;;
    '') ;;
    *) echo "usage: deploy/docker/base-images.sh" >&2; exit 2 ;;
esac

mirror=${KDELAY_DEBIAN_MIRROR:-http://deb.debian.org/debian}
security=${mirror%/debian}/debian-security
hash=$({ cat "${BASH_SOURCE[0]}"; printf '%s\n' "$mirror"; } | sha256sum)
hash=${hash:0:16}
cache=${XDG_CACHE_HOME:-$HOME/.cache}/kdelay/docker-base-$hash

command -v docker >/dev/null || die "event=no_docker msg=\"install docker.io (deploy/local/deps.sh --test)\""

# make_root TARBALL: a bookworm minbase root as a tarball (debian:bookworm).
make_root() {
    local out=$1
    # shellcheck disable=SC2016 # "$1" below is for mmdebstrap's hook to expand
    local -a opts=(--variant=minbase --format=tar
        # as the official images: apt keeps no .debs nor caches in a layer
        --customize-hook="upload $clean /etc/apt/apt.conf.d/docker-clean"
        --customize-hook='rm -rf "$1"/var/lib/apt/lists/* "$1"/var/cache/apt/*.bin')
    command -v mmdebstrap >/dev/null || die "event=no_mmdebstrap msg=\"install mmdebstrap (deploy/local/deps.sh --test)\""
    log "event=mmdebstrap out=$out"
    mmdebstrap --quiet "${opts[@]}" bookworm "$out.tmp" \
        "deb $mirror bookworm main" "deb $mirror bookworm-updates main" \
        "deb $security bookworm-security main"
    mv "$out.tmp" "$out"
}

# make_slim FULL TARBALL: debian:bookworm-slim from the full root, as the
# official slim image is made (debuerreotype's slimify): dpkg is told to
# leave documentation, man pages and translations out from now on
# (/etc/dpkg/dpkg.cfg.d/docker-slim) and those already installed are
# deleted; copyright files and locale.alias stay.
make_slim() {
    local full=$1 out=$2 d p
    d=$(mktemp -d "$cache/slim.XXXXXX")
    tar -C "$d" --numeric-owner -xpf "$full"
    {
        echo "# deploy/docker/base-images.sh: as the official slim image"
        for p in doc man info groff lintian linda locale; do echo "path-exclude /usr/share/$p/*"; done
        echo "path-include /usr/share/doc/*/copyright"
        echo "path-include /usr/share/locale/locale.alias"
    } >"$d/etc/dpkg/dpkg.cfg.d/docker-slim"
    find "$d/usr/share/doc" -mindepth 1 ! -type d ! -name copyright -delete
    find "$d/usr/share/doc" -mindepth 1 -depth -type d -empty -delete
    for p in man info groff lintian linda; do
        [[ ! -d $d/usr/share/$p ]] || find "$d/usr/share/$p" -mindepth 1 -maxdepth 1 -exec rm -rf {} +
    done
    find "$d/usr/share/locale" -mindepth 1 -maxdepth 1 ! -name locale.alias -exec rm -rf {} +
    tar -C "$d" --numeric-owner -cf "$out.tmp" .
    rm -rf "$d"
    mv "$out.tmp" "$out"
    log "event=slimmed from=$full out=$out"
}

mkdir -p "$cache"
clean=$cache/docker-clean
cat >"$clean" <<'EOF'
DPkg::Post-Invoke { "rm -f /var/cache/apt/archives/*.deb /var/cache/apt/archives/partial/*.deb /var/cache/apt/*.bin || true"; };
APT::Update::Post-Invoke { "rm -f /var/cache/apt/archives/*.deb /var/cache/apt/archives/partial/*.deb /var/cache/apt/*.bin || true"; };
Dir::Cache::pkgcache "";
Dir::Cache::srcpkgcache "";
EOF
exec 9>"$cache/.lock"
flock -w 900 9 || die "event=lock_timeout lock=$cache/.lock"
for flavour in full slim; do
    tag=debian:bookworm
    [[ $flavour == slim ]] && tag=debian:bookworm-slim
    have=$(docker image inspect -f '{{index .Config.Labels "io.kdelay.base-hash"}}' "$tag" 2>/dev/null || true)
    if [[ $have == "$hash" ]]; then
        log "event=present image=$tag hash=$hash"
        continue
    fi
    if [[ -n $(docker image inspect -f '{{.Id}}' "$tag" 2>/dev/null) && -z $have ]]; then
        log "event=present image=$tag msg=\"not ours (pulled?): left alone\""
        continue
    fi
    tarball=$cache/bookworm-$flavour.tar
    [[ -s $cache/bookworm-full.tar ]] || make_root "$cache/bookworm-full.tar"
    [[ -s $tarball ]] || make_slim "$cache/bookworm-full.tar" "$tarball"
    old=$(docker image inspect -f '{{.Id}}' "$tag" 2>/dev/null || true)
    docker import --change 'CMD ["bash"]' \
        --change "LABEL io.kdelay.base-hash=$hash" \
        --change 'ENV PATH=/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin' \
        "$tarball" "$tag" >/dev/null
    log "event=imported image=$tag hash=$hash from=$tarball"
    [[ -z $old ]] || docker rmi "$old" >/dev/null 2>&1 || true # an older one of ours, when unused
done
