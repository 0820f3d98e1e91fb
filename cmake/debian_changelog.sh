#!/bin/sh
# SPDX-License-Identifier: Apache-2.0
# Writes the Debian changelog (changelog.Debian.gz) of the build whose
# version VERSION_ENV holds (cmake/version.sh -f env): one entry pointing at
# the upstream changelog, signed by the package's contact. A release is
# dated as CHANGELOG.md dates it (its "## X.Y.Z — YYYY-MM-DD" heading, which
# it must have); a build that is not a release (0.3.0~dev+<commit>) is
# UNRELEASED, dated by its commit (SOURCE_DATE_EPOCH or now without one).
# Usage: debian_changelog.sh CHANGELOG.md VERSION_ENV CONTACT OUT.gz
set -eu
changelog=$1 env=$2 contact=$3 out=$4
KDELAY_RELEASE="" KDELAY_PRE="" KDELAY_VERSION_DEB="" KDELAY_REVISION="" KDELAY_DATE=""
# shellcheck source=/dev/null # VERSION_ENV is written at build time
. "$env"
if [ -z "$KDELAY_PRE" ]; then
  day=$(sed -n "s/^## $KDELAY_RELEASE — \([0-9-]*\)$/\1/p" "$changelog" | head -n 1)
  [ -n "$day" ] || { echo "debian_changelog.sh: no \"## $KDELAY_RELEASE — YYYY-MM-DD\" heading in $changelog" >&2; exit 1; }
  dist=unstable
  what="Release $KDELAY_RELEASE: see changelog.gz (CHANGELOG.md) for what changed."
else
  day=$KDELAY_DATE
  [ -n "$day" ] || day=$(date -u -d "@${SOURCE_DATE_EPOCH:-$(date +%s)}" +%F)
  dist=UNRELEASED
  what="Not a release: $KDELAY_RELEASE in the making at commit $KDELAY_REVISION; see changelog.gz (CHANGELOG.md, Unreleased)."
fi
when=$(LC_ALL=C date -u -R -d "$day")
printf 'kdelay (%s) %s; urgency=medium\n\n  * %s\n\n -- %s  %s\n' \
  "$KDELAY_VERSION_DEB" "$dist" "$what" "$contact" "$when" | gzip -9nc >"$out"
