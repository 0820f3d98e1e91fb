#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# The .deb on a fresh Debian root: builds kdelay_<version>_amd64.deb with
# `cpack -G DEB` in a tree of its own configured for Debian's paths
# (BUILD_DIR/deb), checks its control data (Depends, the conffile 0640)
# and contents; then takes a minimal bookworm root (mmdebstrap, with systemd) in which
# `deploy/local/deps.sh --run` ran, installs the package there with dpkg
# (which refuses it if deps.sh --run missed a dependency), runs
# `kdelay-forwarder --version` and `kdelayctl --help` in it (chroot),
# `systemd-analyze verify --root` on the installed unit, purges the
# package and checks that the root is as before.
#
# The root is cached as a tarball outside the clone,
# ${XDG_CACHE_HOME:-~/.cache}/kdelay/deb-root/, keyed by deps.sh's
# content: made again (30 s to 2.5 minutes, from deb.debian.org) when deps.sh
# changes or the file is missing. Needs root (chroot) and mmdebstrap
# (deploy/local/deps.sh --test).
# Usage: check_deb.sh SOURCE_DIR BUILD_DIR
set -euo pipefail
src=${1:?usage: check_deb.sh SOURCE_DIR BUILD_DIR}
build=${2:?usage: check_deb.sh SOURCE_DIR BUILD_DIR}
start=$(date +%s)
log() { printf 'ts=%s level=info prog=check_deb %s\n' "$(date -u +%FT%TZ)" "$*" >&2; }
fail() {
  printf 'ts=%s level=error prog=check_deb %s\n' "$(date -u +%FT%TZ)" "$*" >&2
  exit 1
}
((EUID == 0)) || fail "event=not_root msg=\"installing into a chroot needs root\""
for c in mmdebstrap dpkg-deb systemd-analyze; do
  command -v "$c" >/dev/null || fail "event=missing_tool tool=$c msg=\"deploy/local/deps.sh --test\""
done

# --- the package ----------------------------------------------------------
pkgdir=$build/deb
log event=deb_build dir="$pkgdir"
{ cmake -S "$src" -B "$pkgdir" -DCMAKE_BUILD_TYPE=RelWithDebInfo -DCMAKE_INSTALL_PREFIX=/usr \
  -DCMAKE_INSTALL_SYSCONFDIR=/etc -DBUILD_TESTING=OFF >"$pkgdir.log" 2>&1 &&
  cmake --build "$pkgdir" -j "${KDELAY_DEB_JOBS:-$(nproc)}" >>"$pkgdir.log" 2>&1 &&
  rm -f "$pkgdir"/kdelay_*.deb &&
  (cd "$pkgdir" && cpack -G DEB) >>"$pkgdir.log" 2>&1; } ||
  { tail -30 "$pkgdir.log" >&2; fail event=deb_build_failed log="$pkgdir.log"; }
# The package's version is the build's (cmake/version.sh): 0.3.0 for a
# release, 0.3.0~dev+<commit> otherwise; the library's file name keeps
# X.Y.Z.
version=$(sed -n 's/^CMAKE_PROJECT_VERSION:STATIC=//p' "$pkgdir/CMakeCache.txt")
deb_version=$(sed -n 's/^KDELAY_VERSION_DEB=//p' "$pkgdir/version/version.env")
full_version=$(sed -n 's/^KDELAY_VERSION=//p' "$pkgdir/version/version.env")
deb=$pkgdir/kdelay_${deb_version}_amd64.deb
[ -f "$deb" ] || fail event=no_deb want="$deb" found="$(compgen -G "$pkgdir/*.deb" | tr '\n' ' ')"
log event=deb_built file="${deb##*/}" bytes="$(stat -c %s "$deb")" seconds=$(($(date +%s) - start))

depends=$(dpkg-deb -f "$deb" Depends)
for lib in librdkafka1 libmariadb3 libcjson1 libconfig9 libmicrohttpd12 libsystemd0 libjemalloc2; do
  [[ ", $depends" == *", $lib"* ]] || fail event=bad_depends missing="$lib" depends="\"$depends\""
done
conffiles=$(dpkg-deb --ctrl-tarfile "$deb" | tar -xO ./conffiles)
[ "$conffiles" = /etc/kdelay/kdelay.conf ] || fail event=bad_conffiles conffiles="\"$conffiles\""
contents=$(dpkg-deb -c "$deb")
want=(./usr/bin/kdelay-forwarder ./usr/bin/kdelayctl
  "./usr/lib/x86_64-linux-gnu/libkdelay.so.$version" ./usr/lib/x86_64-linux-gnu/libkdelay.so.0
  ./usr/include/kdelay/kdelay.h ./usr/lib/x86_64-linux-gnu/pkgconfig/kdelay.pc
  ./usr/lib/systemd/system/kdelay-forwarder@.service ./usr/share/man/man1/kdelayctl.1.gz
  ./usr/lib/systemd/system/kdelay-gc.service ./usr/lib/systemd/system/kdelay-gc.timer
  ./usr/share/doc/kdelay/examples/systemd/kafka-credentials.conf
  ./usr/share/man/man5/kdelay.conf.5.gz ./usr/share/man/man8/kdelay-forwarder.8.gz
  ./usr/share/doc/kdelay/copyright ./usr/share/doc/kdelay/README.md)
for f in "${want[@]}"; do
  grep -qE " $f( -> .*)?$" <<<"$contents" || fail event=missing_in_deb file="$f"
done
grep -qE '^-rw-r----- root/root .* \./etc/kdelay/kdelay\.conf$' <<<"$contents" ||
  fail event=bad_conf_mode line="\"$(grep kdelay.conf <<<"$contents")\""
if grep -vE ' \./(usr|etc/kdelay)(/|$)| \./$| \./etc/$' <<<"$contents"; then
  fail event=file_outside_usr_and_etc_kdelay
fi
# The licence (Apache-2.0, DEP-5) and the NOTICE travel with the package.
copyright=$(dpkg-deb --fsys-tarfile "$deb" | tar -xO ./usr/share/doc/kdelay/copyright)
grep -qx 'License: Apache-2.0' <<<"$copyright" || fail event=bad_copyright want=Apache-2.0
grep -qE ' \./usr/share/doc/kdelay/NOTICE$' <<<"$contents" || fail event=missing_in_deb file=NOTICE
log event=deb_checked files="$(grep -c '^-' <<<"$contents")" depends="\"$depends\"" conffiles="$conffiles"

# --- a fresh bookworm root with deps.sh --run -------------------------------
cache=${XDG_CACHE_HOME:-$HOME/.cache}/kdelay/deb-root
# Bump the recipe when the mmdebstrap command below changes.
recipe="bookworm minbase+systemd deps.sh--run v2"
key=$({ cat "$src/deploy/local/deps.sh"; echo "$recipe"; } | sha256sum | cut -c1-16)
tarball=$cache/bookworm-run-$key.tar
if [ ! -f "$tarball" ]; then
  mkdir -p "$cache"
  t0=$(date +%s)
  log event=root_create tarball="$tarball"
  tmp=$tarball.tmp.$$
  # Customize hooks run on the host with the root as $1: the package list
  # before and after `deps.sh --run` goes next to the tarball.
  # systemd: the units systemd-analyze verify needs (sysinit.target, ...),
  # as on a machine that runs the service.
  if ! mmdebstrap --variant=minbase --include=systemd --mode=root --format=tar \
    --customize-hook="chroot \"\$1\" dpkg-query -W -f='\${Package}\n' | sort >'$tmp.before'" \
    --customize-hook="upload $src/deploy/local/deps.sh /tmp/deps.sh" \
    --customize-hook="chroot \"\$1\" bash /tmp/deps.sh --run" \
    --customize-hook="rm -f \"\$1/tmp/deps.sh\"" \
    --customize-hook="chroot \"\$1\" dpkg-query -W -f='\${Package}\n' | sort >'$tmp.after'" \
    bookworm "$tmp" >"$tmp.log" 2>&1; then
    tail -30 "$tmp.log" >&2
    rm -f "$tmp" "$tmp.before" "$tmp.after"
    fail event=root_create_failed log="$tmp.log"
  fi
  comm -13 "$tmp.before" "$tmp.after" >"$tarball.run-packages"
  grep 'prog=deps.sh' "$tmp.log" >"$tarball.deps-log" || true
  rm -f "$tmp.before" "$tmp.after" "$tmp.log"
  mv "$tmp" "$tarball"
  log event=root_created seconds=$(($(date +%s) - t0)) bytes="$(stat -c %s "$tarball")"
  # older roots (an older deps.sh) go
  find "$cache" -maxdepth 1 -name 'bookworm-run-*' ! -name "bookworm-run-$key.*" -delete
fi
log event=deps_run packages="$(wc -l <"$tarball.run-packages")" \
  installed="$(paste -sd, "$tarball.run-packages")"
# deps.sh --run installs the runtime libraries and nothing else
while read -r p; do
  case $p in
    lib* | mariadb-common | mysql-common) ;;
    *) fail event=deps_run_not_a_library package="$p" list="$tarball.run-packages" ;;
  esac
done <"$tarball.run-packages"

root=$(mktemp -d /var/tmp/kdelay-deb-root.XXXXXX)
trap 'rm -rf --one-file-system "$root"' EXIT
tar -xf "$tarball" -C "$root"
# Everything but dpkg's own records, logs and caches, to compare after purge.
snapshot() {
  (cd "$root" && find . -xdev \( -path ./var/lib/dpkg -o -path ./var/log -o -path ./var/cache \
    -o -path ./tmp -o -path ./etc/ld.so.cache \) -prune -o -printf '%y %m %u:%g %p\n') | sort
}
before=$(snapshot)

# --- install, run, verify, purge --------------------------------------------
cp "$deb" "$root/tmp/"
out=$(chroot "$root" dpkg -i "/tmp/${deb##*/}" 2>&1) ||
  { printf '%s\n' "$out" >&2; fail event=dpkg_install_failed msg="\"a dependency deps.sh --run did not install?\""; }
log event=installed package="${deb##*/}"
stat=$(stat -c '%a %U:%G' "$root/etc/kdelay/kdelay.conf")
[ "$stat" = "640 root:root" ] || fail event=bad_conf_mode installed="\"$stat\""
# shellcheck disable=SC2016 # a dpkg-query format, not a shell expansion
chroot "$root" dpkg-query -W -f='${Conffiles}\n' kdelay | grep -q '^ /etc/kdelay/kdelay.conf ' ||
  fail event=not_a_conffile
v=$(chroot "$root" kdelay-forwarder --version) || fail event=forwarder_version_failed
[ "$(dpkg-deb -f "$deb" Version)" = "$deb_version" ] || fail event=bad_package_version got="\"$(dpkg-deb -f "$deb" Version)\"" want="$deb_version"
[[ $v == "kdelay-forwarder $full_version commit="*" schema="*" librdkafka="* ]] || fail event=bad_version got="\"$v\"" want="\"kdelay-forwarder $full_version ...\""
# lintian (deps.sh --test): no tag about the copyright file or the
# licence; the other tags it gives are docs/development.md's list.
lint=$(lintian --tag-display-limit 0 "$deb" 2>&1 | grep -v '^running with root privileges') || true
if grep -iE 'copyright|licen[cs]e' <<<"$lint" >&2; then fail event=lintian_copyright_tags; fi
log event=lintian tags="$(grep -cE '^[EWI]: ' <<<"$lint")" copyright_tags=0
help=$(chroot "$root" kdelayctl --help) || fail event=kdelayctl_help_failed
grep -q '^Usage: kdelayctl ' <<<"$help" || fail event=bad_help
# the default configuration the binaries were built with is Debian's
fhelp=$(chroot "$root" kdelay-forwarder --help) || fail event=forwarder_help_failed
grep -q '/etc/kdelay/kdelay.conf' <<<"$fhelp" || fail event=default_config_not_in_etc
log event=ran version="\"$v\"" help_lines="$(wc -l <<<"$help")"
# The installed unit, and the binary its ExecStart names, inside the root;
# any line verify prints is a failure (check_systemd_unit.sh).
unit=$root/usr/lib/systemd/system/kdelay-forwarder@.service
# ExecStart= is /bin/sh -c '...' /usr/bin/kdelay-forwarder %i (the optional
# settings put together by a shell that execs the forwarder).
grep -q '^    /usr/bin/kdelay-forwarder %i$' "$unit" || fail event=bad_execstart
grep -q '^    /usr/bin/kdelayctl$' "$root/usr/lib/systemd/system/kdelay-gc.service" || fail event=bad_gc_execstart
vout=$(systemd-analyze verify --root="$root" kdelay-forwarder@ci.service kdelay-gc.service kdelay-gc.timer 2>&1) ||
  { printf '%s\n' "$vout" >&2; fail event=verify_failed; }
[ -z "$vout" ] || { printf '%s\n' "$vout" >&2; fail event=verify_warned; }
log event=unit_verified units=kdelay-forwarder@ci.service,kdelay-gc.service,kdelay-gc.timer
out=$(chroot "$root" dpkg --purge kdelay 2>&1) || { printf '%s\n' "$out" >&2; fail event=purge_failed; }
chroot "$root" dpkg-query -W kdelay >/dev/null 2>&1 && fail event=still_known_to_dpkg
rm -f "$root/tmp/${deb##*/}"
left=$(diff <(printf '%s\n' "$before") <(snapshot)) ||
  { printf '%s\n' "$left" >&2; fail event=purge_left_files; }
log event=purged root_as_before=yes seconds=$(($(date +%s) - start))
echo "check_deb: ${deb##*/} built (Depends: $depends), installed into a fresh bookworm root after deps.sh --run ($(wc -l <"$tarball.run-packages") packages), ran, unit verified, purged without a trace"
