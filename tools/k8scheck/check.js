// SPDX-License-Identifier: Apache-2.0
// Validates Kubernetes manifests against the Kubernetes API schemas (the
// kubernetes-models package's JSON schemas, by ajv; ServiceMonitor by
// @kubernetes-models/prometheus-operator's). Usage: node check.js FILE...
// (or a directory: its *.yaml). Each YAML document is checked by its
// apiVersion and kind; a kind with no schema here fails, except the
// kustomize file (Kustomization: not an API object). Exit 0: all valid;
// 1: a document is invalid or unknown (each named with its error).
"use strict";
const fs = require("fs");
const path = require("path");
const { pathToFileURL } = require("url");
const YAML = require("yaml");

// The models are ES modules, which NODE_PATH does not reach: each is
// imported by its file in the first NODE_PATH directory (run.sh sets it).
const modules = (process.env.NODE_PATH || "").split(path.delimiter)[0];

function modelPath(apiVersion, kind) {
  const [group, version] = apiVersion.includes("/") ? apiVersion.split("/") : ["", apiVersion];
  if (group === "monitoring.coreos.com")
    return `@kubernetes-models/prometheus-operator/${group}/${version}/${kind}.js`;
  return group ? `kubernetes-models/${group}/${version}/${kind}.js` : `kubernetes-models/${version}/${kind}.js`;
}

function files(args) {
  const out = [];
  for (const a of args) {
    if (fs.statSync(a).isDirectory()) {
      for (const f of fs.readdirSync(a).sort())
        if (f.endsWith(".yaml") || f.endsWith(".yml")) out.push(path.join(a, f));
    } else {
      out.push(a);
    }
  }
  return out;
}

async function main() {
let bad = 0, checked = 0, skipped = 0;
for (const file of files(process.argv.slice(2))) {
  const docs = YAML.parseAllDocuments(fs.readFileSync(file, "utf8"));
  for (const [i, d] of docs.entries()) {
    const where = `${file}#${i + 1}`;
    if (d.errors.length) {
      console.error(`k8scheck: ${where}: YAML: ${d.errors[0].message}`);
      bad++;
      continue;
    }
    const obj = d.toJS();
    if (obj === null) continue;
    const { apiVersion, kind } = obj;
    if (kind === "Kustomization" && /^kustomize\.config\.k8s\.io\//.test(apiVersion)) {
      skipped++;
      continue;
    }
    let Model;
    try {
      const file = path.join(modules, modelPath(String(apiVersion), String(kind)));
      const mod = await import(pathToFileURL(file).href);
      Model = mod[kind] || mod.default;
    } catch (e) {
      console.error(`k8scheck: ${where}: no schema for apiVersion ${JSON.stringify(apiVersion)} kind ${JSON.stringify(kind)}`);
      bad++;
      continue;
    }
    try {
      new Model(obj).validate();
      checked++;
      console.log(`k8scheck: ${where}: ${kind} ${obj.metadata && obj.metadata.name}: valid`);
    } catch (e) {
      console.error(`k8scheck: ${where}: ${kind} ${obj.metadata && obj.metadata.name}: ${e.message}`);
      bad++;
    }
  }
}
console.log(`k8scheck: checked=${checked} invalid=${bad} not_api_objects=${skipped}`);
return bad ? 1 : 0;
}

main().then((rc) => process.exit(rc), (e) => {
  console.error(`k8scheck: ${e.stack || e}`);
  process.exit(1);
});
