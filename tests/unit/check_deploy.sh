#!/usr/bin/env bash
# The deploy files, as far as this machine can test them (no container
# runtime, no cluster): deploy/docker/build.sh (the Dockerfile's build
# steps) installs into a DESTDIR; the installed entrypoint runs the
# forwarder and kdelayctl with the options the environment gives; compose,
# the Kubernetes manifests and the Grafana dashboard parse. (The metric
# names the dashboard and the alert rules use are checked against a real
# scrape by test_http.)
# Usage: check_deploy.sh SOURCE_DIR BUILD_DIR
set -euo pipefail
src=${1:?usage: check_deploy.sh SOURCE_DIR BUILD_DIR}
build=${2:?usage: check_deploy.sh SOURCE_DIR BUILD_DIR}
# The suite's own settings must not leak into the entrypoint's commands.
unset KDELAY_BROKERS KDELAY_MYSQL_URL KDELAY_INSTANCE KDELAY_HTTP_LISTEN \
    KDELAY_DELIVERY KDELAY_TOPIC_PREFIX KDELAY_CONFIG KDELAY_ENTRYPOINT_DRY_RUN \
    KDELAY_KAFKA_CONFIG
dest=$(mktemp -d)
trap 'rm -rf "$dest"' EXIT
fail() { echo "check_deploy: $*" >&2; exit 1; }

"$src/deploy/docker/build.sh" "$build" "$dest"
bin=$dest/usr/local/bin
for b in kdelay-forwarder kdelayctl kdelay-entrypoint; do
    [ -x "$bin/$b" ] || fail "$b not installed by build.sh"
done

# The entrypoint: the command it would run, from the environment.
export KDELAY_BINDIR=$bin KDELAY_CONFIG=$dest/none.conf
out=$(KDELAY_ENTRYPOINT_DRY_RUN=1 KDELAY_BROKERS=k:9092 KDELAY_MYSQL_URL=mysql://u@db/kdelay \
    KDELAY_INSTANCE=forwarder-1 KDELAY_DELIVERY=exactly_once "$bin/kdelay-entrypoint")
want="$bin/kdelay-forwarder -X forwarder.instance=forwarder-1 -X forwarder.http_listen=0.0.0.0:9464 -X forwarder.delivery=exactly_once"
[ "$out" = "$want" ] || fail "forwarder command: got '$out', want '$want'"
# (KDELAY_BROKERS and KDELAY_MYSQL_URL are read by the binaries themselves.)
out=$(KDELAY_ENTRYPOINT_DRY_RUN=1 KDELAY_BROKERS=k:9092 "$bin/kdelay-entrypoint" init --partitions 3)
[ "$out" = "$bin/kdelayctl topics create --partitions 3
$bin/kdelayctl db migrate" ] || fail "init commands: got '$out'"
out=$(KDELAY_ENTRYPOINT_DRY_RUN=1 KDELAY_TOPIC_PREFIX=p "$bin/kdelay-entrypoint" kdelayctl status some-id)
[ "$out" = "$bin/kdelayctl -X topic_prefix=p status some-id" ] || fail "kdelayctl command: got '$out'"
# The installed binaries run through it (the shared library from DESTDIR;
# KDELAY_CONFIG is the binaries' own default file too: a real one here).
export LD_LIBRARY_PATH=$dest/usr/local/lib
printf 'topic_prefix = "deploycheck";\n' >"$dest/kdelay.conf"
export KDELAY_CONFIG=$dest/kdelay.conf
"$bin/kdelay-entrypoint" forwarder --help | grep -q "kdelay-forwarder" || fail "forwarder --help through the entrypoint"
"$bin/kdelay-entrypoint" kdelayctl tiers plan >/dev/null || fail "kdelayctl tiers plan through the entrypoint"

# The files parse.
python3 - "$src" <<'PY'
import glob, json, sys, yaml
src = sys.argv[1]
files = [src + "/deploy/docker/compose.yaml"] + sorted(glob.glob(src + "/deploy/kubernetes/*.yaml"))
for f in files:
    docs = [d for d in yaml.safe_load_all(open(f)) if d is not None]
    assert docs, f + ": empty"
    for d in docs:
        if "deploy/kubernetes" in f:
            assert "kind" in d and "apiVersion" in d, f + ": no kind/apiVersion"
d = json.load(open(src + "/deploy/observability/kdelay-dashboard.json"))
assert d["panels"] and all(p["targets"] for p in d["panels"]), "dashboard: a panel without a query"
print("check_deploy: %d YAML files and the dashboard (%d panels) parse" % (len(files), len(d["panels"])))
PY
grep -q '^FROM debian:bookworm-slim' "$src/deploy/docker/Dockerfile" || fail "Dockerfile: runtime not bookworm-slim"
grep -q 'deploy/docker/build.sh' "$src/deploy/docker/Dockerfile" || fail "Dockerfile does not build with build.sh"
grep -q '^USER 10001' "$src/deploy/docker/Dockerfile" || fail "Dockerfile: not a non-root user"
echo "check_deploy: build.sh installed, entrypoint commands as expected"
