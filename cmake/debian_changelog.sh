#!/bin/sh
# SPDX-License-Identifier: Apache-2.0
# Writes the Debian changelog (changelog.Debian.gz) of release VERSION:
# one entry pointing at the upstream changelog, dated as CHANGELOG.md
# dates the release (its "## VERSION — YYYY-MM-DD" heading), signed by
# the package's contact.
# Usage: debian_changelog.sh CHANGELOG.md VERSION CONTACT OUT.gz
set -eu
changelog=$1 version=$2 contact=$3 out=$4
day=$(sed -n "s/^## $version — \([0-9-]*\)$/\1/p" "$changelog" | head -n 1)
[ -n "$day" ] || { echo "debian_changelog.sh: no \"## $version — YYYY-MM-DD\" heading in $changelog" >&2; exit 1; }
when=$(LC_ALL=C date -u -R -d "$day")
printf 'kdelay (%s) unstable; urgency=medium\n\n  * Release %s: see changelog.gz (CHANGELOG.md) for what changed.\n\n -- %s  %s\n' \
  "$version" "$version" "$contact" "$when" | gzip -9nc >"$out"
