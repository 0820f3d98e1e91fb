#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# The Prometheus alert rules: they load (promtool check rules), fire as
# their unit tests say (promtool test rules), and each alert has severity
# critical or warning, a summary, a description, a unit test that fires
# it, and a runbook_url built from the external label kdelay_runbooks with
# the one documented default, whose anchor is a heading of
# docs/operations.md (one section per alert). Each runbook names its
# metrics and log events and says what is safe and what is not; every
# kdelay_* metric and event=... it names is one the code exports or logs.
# No rule but the recording rule kdelay:forwarder_up names a scrape job or
# reads `up`. Last, a real Prometheus with kdelay_runbooks set renders the
# label's value into a firing alert's runbook_url (promtool 2.42 has no
# external labels in its test files, so it renders the default only).
# Usage: check_alert_rules.sh SOURCE_DIR
set -euo pipefail
src=$(cd "${1:?usage: check_alert_rules.sh SOURCE_DIR}" && pwd)
cd "$src/deploy/observability"
promtool check rules kdelay-alerts.yml
promtool test rules kdelay-alerts.test.yml
python3 - "$src" <<'PY'
import glob, re, sys, yaml
src = sys.argv[1]
rules = [r for g in yaml.safe_load(open("kdelay-alerts.yml"))["groups"] for r in g["rules"]]
tests = yaml.safe_load(open("kdelay-alerts.test.yml"))["tests"]
fired = {t["alertname"] for u in tests for t in u.get("alert_rule_test", []) if t.get("exp_alerts")}
ops = open(src + "/docs/operations.md").read()

# The one documented default, and the annotation every rule must carry.
default = "https://github.com/kdelay/kdelay/blob/main/docs/operations.md"
prefix = "{{ with $externalLabels.kdelay_runbooks }}{{ . }}{{ else }}" + default + "{{ end }}#"
assert "`kdelay_runbooks`" in ops and "runbook_url: '" + prefix in ops, \
    "docs/operations.md documents neither kdelay_runbooks nor the annotation with its default"

# Headings and their sections (GitHub's anchors: lower case, punctuation
# dropped, spaces to -).
sections, anchor = {}, None
for line in ops.splitlines():
    m = re.match(r"(#+) (.*)", line)
    if m:
        anchor = re.sub(r"[^a-z0-9 _-]", "", m.group(2).strip().lower()).replace(" ", "-")
        sections[anchor] = ""
    elif anchor:
        sections[anchor] += line + "\n"

# What the code logs and exports.
code = ""
for path in glob.glob(src + "/src/**/*.[ch]", recursive=True):
    code += open(path, errors="replace").read()
events = set(re.findall(r"event=([a-z_]+)", code)) | set(re.findall(r'"([a-z_]+)"', code))
metrics = {"kdelay_build_info"} | set(re.findall(r"kdelay_forwarder_[a-z_]+", code))
metrics |= {"kdelay_forwarder_" + n for n in re.findall(r'PREFIX "([a-z_]+)', code)}
table = open(src + "/src/fwd/core/kd_metrics.h").read()
for name, kind, unit in re.findall(r'X\(\w+, "(\w+)", (COUNTER|GAUGE|HISTOGRAM), "(\w*)"', table):
    base = "kdelay_forwarder_" + (name[:-3] + "_seconds" if unit == "ms" and name.endswith("_ms") else name)
    metrics.add(base + ("_total" if kind == "COUNTER" else ""))

seen, untested = set(), []
alerts = [r for r in rules if "alert" in r]
for r in alerts:
    a = r["alert"]
    assert r["labels"]["severity"] in ("critical", "warning"), a + ": severity"
    for k in ("summary", "description"):
        assert r["annotations"].get(k, "").strip(), a + ": no " + k
    url = r["annotations"]["runbook_url"]
    assert url.startswith(prefix), a + ": runbook_url not built from kdelay_runbooks and its default: " + url
    anchor = url[len(prefix):]
    assert anchor == a.lower(), a + ": runbook_url's anchor is not the alert's name: #" + anchor
    assert anchor in sections, a + ": no heading for #" + anchor + " in docs/operations.md"
    assert anchor not in seen, a + ": runbook shared"
    seen.add(anchor)
    book = sections[anchor]
    for lead in ("**Metrics:**", "**Log:**", "**Safe:**"):
        assert lead in book, a + ": its runbook has no " + lead
    assert "**Not safe" in book or "**Not a fix" in book, a + ": its runbook says nothing of what is not safe"
    assert re.search(r"`(kdelay_[a-z_]+|up)\b", book.split("**Metrics:**")[1]), a + ": its runbook names no metric"
    assert "event=" in book.split("**Log:**")[1], a + ": its runbook names no log event"
    untested += [a] if a not in fired else []
    assert not re.search(r"\bjob\s*=|\bup\b", r["expr"]), a + ": names a job or reads up (use kdelay:forwarder_up)"
rec = [r for r in rules if "record" in r]
assert [r["record"] for r in rec] == ["kdelay:forwarder_up"], "recording rules"
assert not untested, "alerts without a firing test in kdelay-alerts.test.yml: " + " ".join(untested)

# Every name the runbooks give exists.
unknown_events = sorted(set(re.findall(r"event=([a-z_]+)", ops)) - events)
assert not unknown_events, "docs/operations.md names events the code does not log: " + " ".join(unknown_events)
named = set(re.findall(r"\bkdelay_forwarder_[a-z_]+", ops)) | set(re.findall(r"\bkdelay_build_info\b", ops))
hist = {m + s for m in metrics for s in ("_bucket", "_sum", "_count")}
unknown_metrics = sorted(named - metrics - hist)
assert not unknown_metrics, "docs/operations.md names metrics the forwarder does not export: " + " ".join(unknown_metrics)
# The rules and the dashboard read only exported names (test_http checks
# them against a real scrape as well).
for f in ("kdelay-alerts.yml", "kdelay-dashboard.json"):
    text = re.sub(r"\$externalLabels\.\w+", "", open(f).read())
    used = set(re.findall(r"\bkdelay_(?:forwarder_[a-z_]+|build_info)\b", text))
    unknown = sorted(used - metrics - hist)
    assert not unknown, f + " reads metrics the forwarder does not export: " + " ".join(unknown)
print("check_alert_rules: %d alerts, each critical|warning with summary, description, a promtool test that fires it "
      "and a runbook_url from kdelay_runbooks to its runbook; %d events and %d metrics named in docs/operations.md, "
      "all in the code" % (len(alerts), len(set(re.findall(r"event=([a-z_]+)", ops))), len(named)))
PY

# A real Prometheus with the external label set: the alert that needs one
# sample (KdelayFiringUnclaimed) fires on a scraped target, and its
# runbook_url is the label's value and the anchor.
command -v prometheus >/dev/null || {
	echo "check_alert_rules: prometheus not installed (deploy/local/deps.sh --test)" >&2
	exit 1
}
tmp=$(mktemp -d)
pids=()
cleanup() {
	local p
	for p in "${pids[@]}"; do kill "$p" 2>/dev/null || true; done
	for p in "${pids[@]}"; do wait "$p" 2>/dev/null || true; done
	rm -rf "$tmp"
}
trap cleanup EXIT
python3 - "$tmp/target.port" <<'PY' &
import http.server, sys
body = b"kdelay_forwarder_firing_unclaimed 1\n"
class H(http.server.BaseHTTPRequestHandler):
    def do_GET(self):
        self.send_response(200)
        self.send_header("Content-Type", "text/plain; version=0.0.4")
        self.end_headers()
        self.wfile.write(body)
    def log_message(self, *a):
        pass
s = http.server.HTTPServer(("127.0.0.1", 0), H)
with open(sys.argv[1] + ".tmp", "w") as f:
    f.write(str(s.server_address[1]))
import os; os.rename(sys.argv[1] + ".tmp", sys.argv[1])
s.serve_forever()
PY
pids+=($!)
for _ in $(seq 100); do [ -s "$tmp/target.port" ] && break; sleep 0.1; done
target=$(cat "$tmp/target.port")
base="https://runbooks.example.com/kdelay/operations.html"
cat >"$tmp/prometheus.yml" <<EOF
global:
  scrape_interval: 1s
  evaluation_interval: 1s
  external_labels:
    kdelay_runbooks: $base
rule_files: ["$src/deploy/observability/kdelay-alerts.yml"]
scrape_configs:
  - job_name: kdelay-forwarder
    static_configs: [{targets: ["127.0.0.1:$target"]}]
EOF
port=$(python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])')
prometheus --config.file="$tmp/prometheus.yml" --storage.tsdb.path="$tmp/data" \
	--web.listen-address="127.0.0.1:$port" --log.level=warn >"$tmp/prometheus.log" 2>&1 &
pids+=($!)
url=$(python3 - "$port" <<'PY2'
import json, sys, time, urllib.request
deadline = time.monotonic() + 60 # Prometheus starts, scrapes, evaluates
while time.monotonic() < deadline:
    try:
        with urllib.request.urlopen("http://127.0.0.1:%s/api/v1/alerts" % sys.argv[1], timeout=2) as r:
            for a in json.load(r)["data"]["alerts"]:
                if a["labels"]["alertname"] == "KdelayFiringUnclaimed" and a["state"] == "firing":
                    print(a["annotations"]["runbook_url"])
                    sys.exit(0)
    except OSError:
        pass
    time.sleep(0.1)
PY2
)
if [ "$url" != "$base#kdelayfiringunclaimed" ]; then
	echo "check_alert_rules: with kdelay_runbooks=$base Prometheus rendered runbook_url \"$url\"" >&2
	cat "$tmp/prometheus.log" >&2
	exit 1
fi
echo "check_alert_rules: Prometheus $(prometheus --version 2>&1 | awk 'NR==1{print $3}') with kdelay_runbooks set renders runbook_url $url"
