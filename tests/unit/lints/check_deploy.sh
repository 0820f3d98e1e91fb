#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# The deploy files, as far as this machine can test them (no container
# runtime, no cluster): deploy/docker/build.sh (the Dockerfile's build
# steps) installs into a DESTDIR; the installed entrypoint runs the
# forwarder and kdelayctl with the options the environment gives; compose,
# the Kubernetes manifests and the Grafana dashboard parse, and the
# manifests validate against the Kubernetes API schemas, field by field, and
# the restricted Pod Security Standard (tools/k8scheck), as files and as
# `kubectl kustomize` renders them; the kustomization's images entry sets
# every container's image. (The metric
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
# Captured first: grep -q stops reading at its match (SIGPIPE + pipefail).
fwd_help=$("$bin/kdelay-entrypoint" forwarder --help) ||
    fail "forwarder --help through the entrypoint: exit $?"
grep -q "kdelay-forwarder" <<<"$fwd_help" || fail "forwarder --help through the entrypoint"
"$bin/kdelay-entrypoint" kdelayctl tiers plan >/dev/null || fail "kdelayctl tiers plan through the entrypoint"

# The files parse, and the deploy traps stay away.
python3 - "$src" <<'PY'
import glob, json, re, sys, yaml
src = sys.argv[1]
files = [src + "/deploy/docker/compose.yaml"] + sorted(glob.glob(src + "/deploy/kubernetes/*.yaml"))
objs = {}
named = {}  # (kind, name): the object, every Kubernetes file's documents
for f in files:
    docs = [d for d in yaml.safe_load_all(open(f)) if d is not None]
    assert docs, f + ": empty"
    for d in docs:
        if "deploy/kubernetes" in f:
            assert "kind" in d and "apiVersion" in d, f + ": no kind/apiVersion"
            objs.setdefault(f.rsplit("/", 1)[1], d)
            named[(d["kind"], d.get("metadata", {}).get("name"))] = d
d = json.load(open(src + "/deploy/observability/kdelay-dashboard.json"))
assert d["panels"] and all(p["targets"] for p in d["panels"]), "dashboard: a panel without a query"
var = {v["name"] for v in d["templating"]["list"]}
assert {"job", "instance"} <= var, "dashboard: no job/instance variables"
for p in d["panels"]:
    for t in p["targets"]:
        assert 'job=~"$job"' in t["expr"] and 'instance=~"$instance"' in t["expr"], "dashboard query without $job/$instance: " + t["expr"]
print("check_deploy: %d YAML files and the dashboard (%d panels) parse" % (len(files), len(d["panels"])))

def secs(v):  # compose / Go durations: 30s, 1m30s
    return sum(int(n) * {"s": 1, "m": 60, "h": 3600}[u] for n, u in re.findall(r"(\d+)([smh])", str(v)))
shutdown = 10  # forwarder.shutdown_timeout's default (docs/configuration.md)
assert "| `forwarder.shutdown_timeout` | `10s` |" in open(src + "/docs/configuration.md").read()

# Kubernetes: the example Secret and no Job in the kustomization; the
# forwarders migrate in an init container; readiness tolerant; spread.
k = objs["kustomization.yaml"]
assert "secret.example.yaml" not in k["resources"], "kustomization applies the example Secret"
for r in k["resources"]:
    assert objs[r]["kind"] not in ("Secret", "Job"), r + ": a Secret or a one-off Job in the kustomization"
sts = objs["statefulset.yaml"]
pod = sts["spec"]["template"]
labels = pod["metadata"]["labels"]
for o in ("statefulset.yaml", "pdb.yaml"):
    sel = objs[o]["spec"]["selector"]["matchLabels"]
    assert sel.items() <= labels.items(), o + ": selector does not match the pods"
assert objs["service.yaml"]["spec"]["selector"].items() <= labels.items(), "service selector"
assert sts["spec"]["serviceName"] == objs["service.yaml"]["metadata"]["name"], "serviceName"
spec = pod["spec"]
init = [c for c in spec.get("initContainers", []) if c.get("args") == ["init"]]
assert init, "no init container running `init` (topics create + db migrate)"
env = {e["name"]: e for e in init[0]["env"]}
assert env["KDELAY_MYSQL_PASSWORD"]["valueFrom"]["secretKeyRef"]["key"] == "mysql-migrate-password"
secret = named[("Secret", "kdelay-secrets")]
assert set(secret["stringData"]) >= {"mysql-password", "mysql-migrate-password", "mysql-gc-password", "mysql-ca.pem"}
# Kafka client properties from the Secret kdelay-kafka, as
# KDELAY_KAFKA_CONFIG, in the forwarder and the init container.
kafka = named[("Secret", "kdelay-kafka")]
assert "client.properties" in kafka["stringData"], "kdelay-kafka example without client.properties"
vols = {v["name"]: v for v in pod["spec"]["volumes"]}
for c in pod["spec"]["containers"] + pod["spec"]["initContainers"]:
    env = {e["name"]: e for e in c["env"]}
    path = env["KDELAY_KAFKA_CONFIG"]["value"]
    mounts = [m for m in c["volumeMounts"] if path.startswith(m["mountPath"] + "/")]
    assert mounts and vols[mounts[0]["name"]]["secret"]["secretName"] == "kdelay-kafka", c["name"] + ": KDELAY_KAFKA_CONFIG not from kdelay-kafka"
    assert path.rsplit("/", 1)[1] in kafka["stringData"], c["name"] + ": " + path
# The image by name only, which the kustomization's `images` entry sets
# (kustomize edit set image kdelay=...).
imgs = {i["name"] for i in k.get("images", [])}
assert imgs == {"kdelay"}, "kustomization images: %s" % imgs
# db gc: a CronJob, one run at a time, as the gc user.
cj = objs["cronjob-gc.yaml"]
assert cj["kind"] == "CronJob" and "cronjob-gc.yaml" in k["resources"]
assert cj["spec"]["concurrencyPolicy"] == "Forbid", "db gc CronJob may overlap"
jc = cj["spec"]["jobTemplate"]["spec"]["template"]["spec"]["containers"]
assert jc[0]["args"] == ["kdelayctl", "db", "gc"], jc[0]["args"]
assert {e["name"]: e for e in jc[0]["env"]}["KDELAY_MYSQL_PASSWORD"]["valueFrom"]["secretKeyRef"]["key"] == "mysql-gc-password"
for o in list(objs.values()):
    for c in (o.get("spec", {}).get("template", {}).get("spec", {}).get("containers", []) + o.get("spec", {}).get("template", {}).get("spec", {}).get("initContainers", []) + jc):
        assert c["image"] == "kdelay", c["name"] + ": image " + c["image"] + " (the kustomization's images entry names it)"
fwd = [c for c in spec["containers"] if c["name"] == "forwarder"][0]
rp = fwd["readinessProbe"]
assert rp["periodSeconds"] * rp["failureThreshold"] >= 30, "readiness drops a pod within 30 s"
assert spec["terminationGracePeriodSeconds"] > shutdown, "grace period not above shutdown_timeout"
keys = {c["topologyKey"] for c in spec.get("topologySpreadConstraints", [])}
assert "kubernetes.io/hostname" in keys, "no topology spread over nodes"
assert spec["affinity"]["podAntiAffinity"], "no pod anti-affinity"
for c in spec["containers"] + spec["initContainers"]:
    assert c["securityContext"]["readOnlyRootFilesystem"] and c["resources"]["limits"], c["name"]

# Compose: forwarders restart, get more than shutdown_timeout to stop,
# and the example's target is created before them.
top = yaml.safe_load(open(src + "/deploy/docker/compose.yaml"))
# Compose v1.29 (Debian's docker-compose) refuses a top-level name:
assert set(top) <= {"services", "volumes", "networks"} | {k for k in top if k.startswith("x-")}, sorted(top)
c = top["services"]
# The stand-in override only swaps the registry images (tests/container/
# check_compose.sh runs it).
so = yaml.safe_load(open(src + "/deploy/docker/compose.standin.yaml"))["services"]
assert {n: list(v) for n, v in so.items()} == {"kafka": ["image"], "demo-topic": ["image"], "mariadb": ["image"]}, so
assert c["kafka"]["image"].startswith("apache/kafka:") and c["mariadb"]["image"].startswith("mariadb:")
fwds = [n for n in c if n.startswith("forwarder")]
assert len(fwds) == 2
for n in fwds:
    s = c[n]
    assert s["restart"] == "unless-stopped", n + ": restart policy"
    assert secs(s["stop_grace_period"]) > shutdown, n + ": stop_grace_period"
    assert s["depends_on"]["demo-topic"]["condition"] == "service_completed_successfully", n
    assert "KDELAY_HTTP_LISTEN" in " ".join(s["healthcheck"]["test"]), n + ": health check port fixed"
    assert "forwarder.static_membership=1" in s["command"], n + ": static membership"
assert "demo.out" in c["demo-topic"]["command"] and "--if-not-exists" in c["demo-topic"]["command"]
for n in ("kafka", "mariadb"):
    assert c[n]["restart"] == "unless-stopped", n
print("check_deploy: Kafka client properties from the Secret kdelay-kafka (KDELAY_KAFKA_CONFIG) in %d containers; "
      "db gc CronJob %s, concurrencyPolicy %s; every container's image \"kdelay\", set by the images entry"
      % (len(pod["spec"]["containers"] + pod["spec"]["initContainers"]), cj["spec"]["schedule"], cj["spec"]["concurrencyPolicy"]))
print("check_deploy: kustomization without the example Secret, init container migrates, "
      "readiness probe %ds, spread over %s; compose forwarders restart, stop grace %s > %ds, demo.out created"
      % (rp["periodSeconds"] * rp["failureThreshold"], ",".join(sorted(keys)),
         c[fwds[0]]["stop_grace_period"], shutdown))
PY
# Compose v1.29 accepts compose.yaml and the stand-in override (merge keys,
# service_completed_successfully), where docker-compose is installed
# (deps.sh --test); no daemon is needed.
if command -v docker-compose >/dev/null; then
    KDELAY_MYSQL_PASSWORD=x MARIADB_ROOT_PASSWORD=x docker-compose -p kdelay \
        -f "$src/deploy/docker/compose.yaml" -f "$src/deploy/docker/compose.standin.yaml" config -q ||
        fail "docker-compose refuses compose.yaml (+ compose.standin.yaml)"
    echo "check_deploy: docker-compose $(docker-compose version --short) accepts compose.yaml and compose.standin.yaml"
else
    echo "check_deploy: docker-compose missing, compose v1 not checked"
fi
# The kustomization builds, where kubectl is installed (not by deps.sh:
# no cluster is needed for it).
# Every Kubernetes manifest against the Kubernetes API schemas
# (tools/k8scheck: kubernetes-models from npm; types, enums, required
# fields, every field name, the restricted Pod Security Standard on every
# pod template), after its self-test finds planted errors.
"$src/tools/k8scheck/run.sh" --self-test
"$src/tools/k8scheck/run.sh" "$src/deploy/kubernetes" | tail -n 1
if command -v kubectl >/dev/null; then
    kubectl kustomize "$src/deploy/kubernetes" >"$dest/k8s.yaml" || fail "kubectl kustomize failed"
    ! grep -q '^kind: Secret' "$dest/k8s.yaml" || fail "kustomize build has a Secret"
    echo "check_deploy: kubectl kustomize builds $(grep -c '^kind:' "$dest/k8s.yaml") objects"
    # What is applied: every rendered object, checked alike.
    "$src/tools/k8scheck/run.sh" - <"$dest/k8s.yaml" | tail -n 1
    # The image as `kustomize edit set image kdelay=REGISTRY/kdelay:TAG`
    # sets it (that edit's result: the images entry's newName and newTag;
    # kubectl has no `kustomize edit`): every container takes it.
    cp -r "$src/deploy/kubernetes" "$dest/k8s-image"
    python3 - "$dest/k8s-image/kustomization.yaml" <<'PY'
import sys, yaml
f = sys.argv[1]
k = yaml.safe_load(open(f))
k["images"] = [{"name": "kdelay", "newName": "registry.example.com/kdelay", "newTag": "9.9.9"}]
yaml.safe_dump(k, open(f, "w"))
PY
    kubectl kustomize "$dest/k8s-image" >"$dest/k8s-image.yaml" || fail "kubectl kustomize (image set) failed"
    n=$(grep -c '^ *image: ' "$dest/k8s-image.yaml")
    { [ "$n" -ge 3 ] && [ "$(grep -c '^ *image: registry.example.com/kdelay:9.9.9$' "$dest/k8s-image.yaml")" = "$n" ]; } ||
        fail "kustomize images entry does not set every container's image"
    echo "check_deploy: the kustomization's image entry sets all $n containers' image"
else
    echo "check_deploy: kubectl missing: kustomize build, its objects and the image entry not checked"
fi
# Docker: a .dockerignore that keeps build trees and .git out, OCI labels,
# the health check's port from the environment.
for p in .git build '.stack*/' .cache; do
    grep -qxF "$p" "$src/.dockerignore" || grep -qxF "$p/" "$src/.dockerignore" || fail ".dockerignore lacks $p"
done
for l in title description source version revision created; do
    grep -q "org.opencontainers.image.$l=" "$src/deploy/docker/Dockerfile" || fail "Dockerfile: no OCI label $l"
done
# shellcheck disable=SC2016 # the Dockerfile's text, ${...} included
{ grep -q 'HEALTHCHECK' "$src/deploy/docker/Dockerfile" && grep -q '127.0.0.1:${KDELAY_HTTP_LISTEN##\*:}/healthz' "$src/deploy/docker/Dockerfile"; } ||
    fail "Dockerfile: health check port not from KDELAY_HTTP_LISTEN"
grep -q '^FROM debian:bookworm-slim' "$src/deploy/docker/Dockerfile" || fail "Dockerfile: runtime not bookworm-slim"
grep -q 'deploy/docker/build.sh' "$src/deploy/docker/Dockerfile" || fail "Dockerfile does not build with build.sh"
grep -q '^USER 10001' "$src/deploy/docker/Dockerfile" || fail "Dockerfile: not a non-root user"
# The image's default version label is the tree's version without its
# commit (cmake/version.sh: 0.3.0-dev while KDELAY_VERSION_PRE is "dev",
# 0.3.0 for the release); a release has its CHANGELOG entry, a tree
# heading for one its "Unreleased" section. The build stage takes the
# commit (ARG REVISION) into the binaries' version.
eval "$("$src/cmake/version.sh" "$src" | grep -E '^KDELAY_(RELEASE|PRE)=')"
image_version=$KDELAY_RELEASE${KDELAY_PRE:+-$KDELAY_PRE}
grep -qx "ARG VERSION=$image_version" "$src/deploy/docker/Dockerfile" || fail "Dockerfile: ARG VERSION is not $image_version"
grep -q -- '-DKDELAY_REVISION=' "$src/deploy/docker/Dockerfile" || fail "Dockerfile: the build does not pass REVISION on (-DKDELAY_REVISION)"
if [ -n "$KDELAY_PRE" ]; then
    grep -qx "## Unreleased" "$src/CHANGELOG.md" || fail "CHANGELOG.md has no Unreleased section for $image_version"
else
    grep -q "^## $KDELAY_RELEASE — " "$src/CHANGELOG.md" || fail "CHANGELOG.md has no entry for $KDELAY_RELEASE"
fi
echo "check_deploy: build.sh installed, entrypoint commands as expected"
