# SPDX-License-Identifier: Apache-2.0
# shellcheck shell=bash disable=SC2034,SC2153,SC2154 # globals shared by the parts
# stack/kafka-jars.sh - sourced by deploy/local/stack.sh: the Kafka version
# to run and its jars, fetched with Maven (deploy/local/kafka/pom.xml) into
# <repo>/.cache/kafka-<version>/libs once. Not a program of its own.

POM=$SCRIPT_DIR/kafka/pom.xml
KAFKA_LIBS=""
MVN=""

kafka_version() {
    if [[ -n $KAFKA_VERSION ]]; then
        printf '%s\n' "$KAFKA_VERSION"
        return
    fi
    [[ -f $POM ]] || die "missing $POM"
    sed -n 's:.*<kafka.version>\([^<]*\)</kafka.version>.*:\1:p' "$POM" | head -n 1
}

kafka_major() { # 3 or 4 ...
    local v
    v=$(kafka_version)
    printf '%s\n' "${v%%.*}"
}

ensure_kafka_jars() {
    local version stamp want
    version=$(kafka_version)
    [[ -n $version ]] || die "cannot read <kafka.version> from $POM"
    KAFKA_LIBS=$REPO_ROOT/.cache/kafka-$version/libs
    stamp=$KAFKA_LIBS/.kdelay-complete
    want=$({ cat "$POM"; printf '%s\n' "$version"; } | sha256sum)
    want=${want%% *}
    if [[ -f $stamp && $(<"$stamp") == "$want" && -f $KAFKA_LIBS/kafka_2.13-$version.jar ]]; then
        return 0
    fi
    need_cmd MVN "Maven (package maven)" mvn
    mkdir -p "$REPO_ROOT/.cache"
    # serialise concurrent downloads (several stack dirs share the cache)
    exec 8>"$REPO_ROOT/.cache/kafka-$version.lock"
    flock -w 900 8 || die "timed out waiting for another Maven download (lock $REPO_ROOT/.cache/kafka-$version.lock)"
    if [[ ! -f $stamp || $(<"$stamp") != "$want" || ! -f $KAFKA_LIBS/kafka_2.13-$version.jar ]]; then
        # the pom changed since the last download: start from a clean directory
        if [[ -f $stamp ]]; then rm -rf "$KAFKA_LIBS"; fi
        log "fetching Apache Kafka $version with Maven into $KAFKA_LIBS (uses ~/.m2; slow only the first time) ..."
        local out
        out=$(mktemp)
        local -a mvn_props=("-Dkafka.version=$version")
        (($(kafka_major) < 4)) || mvn_props+=(-Dkafka4)
        if ! "$MVN" -q -B -f "$POM" "${mvn_props[@]}" dependency:copy-dependencies >"$out" 2>&1 8>&- 9>&-; then
            tail -n 40 "$out" >&2
            rm -f "$out"
            die "Maven could not fetch Kafka (see output above)"
        fi
        rm -f "$out"
        [[ -f $KAFKA_LIBS/kafka_2.13-$version.jar ]] || die "Maven succeeded but $KAFKA_LIBS/kafka_2.13-$version.jar is missing"
        printf '%s\n' "$want" >"$stamp"
        log "Kafka jars ready"
    fi
    exec 8>&-
}
