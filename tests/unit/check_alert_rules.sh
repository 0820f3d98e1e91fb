#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# The Prometheus alert rules: they load (promtool check rules), fire as
# their unit tests say (promtool test rules), and each alert has severity
# critical or warning, a runbook_url whose anchor is a heading of
# docs/operations.md (one section per alert) and a unit test that fires
# it; no rule but the recording rule kdelay:forwarder_up
# names a scrape job or reads `up`.
# Usage: check_alert_rules.sh SOURCE_DIR
set -euo pipefail
src=$(cd "${1:?usage: check_alert_rules.sh SOURCE_DIR}" && pwd)
cd "$src/deploy/observability"
promtool check rules kdelay-alerts.yml
promtool test rules kdelay-alerts.test.yml
python3 - "$src" <<'PY'
import re, sys, yaml
src = sys.argv[1]
rules = [r for g in yaml.safe_load(open("kdelay-alerts.yml"))["groups"] for r in g["rules"]]
tests = yaml.safe_load(open("kdelay-alerts.test.yml"))["tests"]
fired = {t["alertname"] for u in tests for t in u.get("alert_rule_test", []) if t.get("exp_alerts")}
anchors = []
for line in open(src + "/docs/operations.md"):
    m = re.match(r"#+ (.*)", line)
    if m:  # GitHub's anchor: lower case, punctuation dropped, spaces to -
        anchors.append(re.sub(r"[^a-z0-9 _-]", "", m.group(1).strip().lower()).replace(" ", "-"))
base = "https://github.com/kdelay/kdelay/blob/main/docs/operations.md#"
seen, untested = set(), []
alerts = [r for r in rules if "alert" in r]
for r in alerts:
    a = r["alert"]
    assert r["labels"]["severity"] in ("critical", "warning"), a + ": severity"
    url = r["annotations"]["runbook_url"]
    assert url.startswith(base), a + ": runbook_url " + url
    anchor = url[len(base):]
    assert anchor in anchors, a + ": no heading for #" + anchor + " in docs/operations.md"
    assert anchor not in seen, a + ": runbook shared"
    seen.add(anchor)
    untested += [a] if a not in fired else []
    assert not re.search(r"\bjob\s*=|\bup\b", r["expr"]), a + ": names a job or reads up (use kdelay:forwarder_up)"
rec = [r for r in rules if "record" in r]
assert [r["record"] for r in rec] == ["kdelay:forwarder_up"], "recording rules"
assert not untested, "alerts without a firing test in kdelay-alerts.test.yml: " + " ".join(untested)
print("check_alert_rules: %d alerts, each critical|warning with its runbook in docs/operations.md and a promtool test that fires it"
      % len(alerts))
PY
