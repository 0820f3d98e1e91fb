// SPDX-License-Identifier: Apache-2.0
// Validates Kubernetes manifests against the Kubernetes API schemas (the
// kubernetes-models package's JSON schemas, by ajv; ServiceMonitor by
// @kubernetes-models/prometheus-operator's). Usage: node check.js FILE...
// (or a directory: its *.yaml; "-" reads standard input, e.g. the output
// of `kubectl kustomize`). Each YAML document is checked by its
// apiVersion and kind; a kind with no schema here fails, except the
// kustomize file (Kustomization: not an API object). Three checks:
// - types, enums and required fields (the published schemas);
// - every field name, at every depth: the schemas allow unknown fields
//   (so does the API server, unless told otherwise), so each object is
//   walked along the models' type declarations (*.d.ts: the fields each
//   Kubernetes type has) and a field no type has fails, with its path;
// - the "restricted" Pod Security Standard on every pod template (Pod,
//   Deployment, StatefulSet, DaemonSet, ReplicaSet, Job, CronJob), every
//   container (init and ephemeral ones too): runAsNonRoot and a non-zero
//   runAsUser, allowPrivilegeEscalation false, capabilities drop ALL (add
//   at most NET_BIND_SERVICE), seccompProfile RuntimeDefault or Localhost,
//   not privileged, no host namespaces, ports or paths, only the
//   restricted volume types, no sysctls.
// Exit 0: all valid; 1: a document is invalid or unknown (each named with
// its error).
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
    if (a === "-") {
      out.push(a);
    } else if (fs.statSync(a).isDirectory()) {
      for (const f of fs.readdirSync(a).sort())
        if (f.endsWith(".yaml") || f.endsWith(".yml")) out.push(path.join(a, f));
    } else {
      out.push(a);
    }
  }
  return out;
}

// --- Field names, along the models' type declarations (*.d.ts) ---

const declCache = new Map();

// The first interface of a declaration file: {members: {name: type}},
// with imports: {TypeName: file}; null when the file declares none (a
// type alias: a leaf, e.g. IntOrString, Quantity, Time).
function decl(file) {
  if (declCache.has(file)) return declCache.get(file);
  let d = null;
  if (fs.existsSync(file)) {
    const text = fs.readFileSync(file, "utf8").replace(/\/\*[\s\S]*?\*\//g, "");
    const imports = {};
    for (const m of text.matchAll(/import \{ (\w+) \} from "([^"]+)";/g)) {
      let spec = m[2];
      const target = spec.startsWith(".") ? path.resolve(path.dirname(file), spec) : path.join(modules, spec);
      imports[m[1]] = target.replace(/\.js$/, "") + ".d.ts";
    }
    const start = text.search(/export interface \w+( extends [\w, ]+)? \{/);
    if (start >= 0) {
      const open = text.indexOf("{", start);
      d = { members: members(text, open), imports };
    }
  }
  declCache.set(file, d);
  return d;
}

// The members of the object type literal whose "{" is at text[open]:
// {name: type}.
function members(text, open) {
  const out = {};
  let i = open + 1;
  for (;;) {
    const m = /\s*(?:"([^"]+)"|(\w+))\??:\s*|\s*\}|\s*\[key: string\]:\s*/y;
    m.lastIndex = i;
    const r = m.exec(text);
    if (!r || r[0].trim() === "}") break;
    i = m.lastIndex;
    let depth = 0, j = i;
    for (; j < text.length; j++) {
      const c = text[j];
      if ("{<(".includes(c)) depth++;
      else if ("}>)".includes(c)) depth--;
      else if (c === ";" && depth === 0) break;
    }
    const name = r[1] || r[2];
    if (name) out[name] = text.slice(i, j).trim();
    else out["[key: string]"] = text.slice(i, j).trim();
    i = j + 1;
  }
  return out;
}

// The unknown field paths of value v of type t (declared in d).
function walkType(v, t, d, where, out) {
  if (v === null || typeof v !== "object") return;
  t = t.trim();
  const arr = /^Array<([\s\S]*)>$/.exec(t);
  if (arr) {
    if (Array.isArray(v)) v.forEach((e, i) => walkType(e, arr[1], d, `${where}[${i}]`, out));
    return;
  }
  if (t.startsWith("{")) {
    const lit = members(t, 0);
    if ("[key: string]" in lit) {
      for (const k of Object.keys(v)) walkType(v[k], lit["[key: string]"], d, `${where}.${k}`, out);
      return;
    }
    walkMembers(v, lit, d, where, out);
    return;
  }
  if (/^\w+$/.test(t) && d && d.imports[t]) {
    const sub = decl(d.imports[t]);
    if (sub) walkMembers(v, sub.members, sub, where, out);
  }
}

function walkMembers(v, mem, d, where, out) {
  for (const k of Object.keys(v)) {
    const p = where ? `${where}.${k}` : k;
    if (!(k in mem)) out.push(p);
    else walkType(v[k], mem[k], d, p, out);
  }
}

function unknownFields(obj, dtsFile) {
  const d = decl(dtsFile);
  if (!d) return [`(no type declaration ${dtsFile})`];
  const out = [];
  walkMembers(obj, d.members, d, "", out);
  return out;
}

// --- The "restricted" Pod Security Standard ---

const RESTRICTED_VOLUMES = new Set(["configMap", "csi", "downwardAPI", "emptyDir", "ephemeral",
  "persistentVolumeClaim", "projected", "secret"]);

function podSpecs(obj) {
  const s = obj.spec || {};
  switch (obj.kind) {
    case "Pod": return [["spec", s]];
    case "Deployment": case "StatefulSet": case "DaemonSet": case "ReplicaSet": case "Job":
      return [["spec.template.spec", (s.template || {}).spec || {}]];
    case "CronJob":
      return [["spec.jobTemplate.spec.template.spec", (((s.jobTemplate || {}).spec || {}).template || {}).spec || {}]];
    default: return [];
  }
}

function restrictedViolations(obj) {
  const out = [];
  for (const [where, spec] of podSpecs(obj)) {
    const psc = spec.securityContext || {};
    for (const h of ["hostNetwork", "hostPID", "hostIPC"])
      if (spec[h]) out.push(`${where}.${h} is true`);
    if (psc.sysctls && psc.sysctls.length) out.push(`${where}.securityContext.sysctls set`);
    if (psc.runAsUser === 0) out.push(`${where}.securityContext.runAsUser is 0`);
    for (const vol of spec.volumes || []) {
      const types = Object.keys(vol).filter((k) => k !== "name");
      for (const t of types)
        if (!RESTRICTED_VOLUMES.has(t)) out.push(`${where}.volumes ${vol.name}: type ${t} not allowed`);
    }
    const containers = [["containers", spec.containers || []], ["initContainers", spec.initContainers || []],
      ["ephemeralContainers", spec.ephemeralContainers || []]];
    if (!(spec.containers || []).length) out.push(`${where}: no containers`);
    for (const [list, cs] of containers) {
      for (const c of cs) {
        const at = `${where}.${list}[${c.name}]`;
        const sc = c.securityContext || {};
        if (sc.privileged) out.push(`${at}: privileged`);
        if (sc.allowPrivilegeEscalation !== false) out.push(`${at}: allowPrivilegeEscalation is not false`);
        const caps = sc.capabilities || {};
        if (!(caps.drop || []).includes("ALL")) out.push(`${at}: capabilities.drop lacks ALL`);
        for (const a of caps.add || [])
          if (a !== "NET_BIND_SERVICE") out.push(`${at}: capabilities.add ${a}`);
        const nonRoot = sc.runAsNonRoot === true || (sc.runAsNonRoot === undefined && psc.runAsNonRoot === true);
        if (!nonRoot) out.push(`${at}: runAsNonRoot not true (container or pod)`);
        const user = sc.runAsUser !== undefined ? sc.runAsUser : psc.runAsUser;
        if (user === undefined) out.push(`${at}: no runAsUser (container or pod)`);
        else if (user === 0) out.push(`${at}: runAsUser is 0`);
        const sp = sc.seccompProfile || psc.seccompProfile || {};
        if (!["RuntimeDefault", "Localhost"].includes(sp.type))
          out.push(`${at}: seccompProfile.type is ${sp.type || "unset"} (container or pod), must be RuntimeDefault or Localhost`);
        if (sc.procMount && sc.procMount !== "Default") out.push(`${at}: procMount ${sc.procMount}`);
        for (const p of c.ports || [])
          if (p.hostPort) out.push(`${at}: hostPort ${p.hostPort}`);
      }
    }
  }
  return out;
}

async function main() {
let bad = 0, checked = 0, skipped = 0;
for (const file of files(process.argv.slice(2))) {
  const text = file === "-" ? fs.readFileSync(0, "utf8") : fs.readFileSync(file, "utf8");
  const docs = YAML.parseAllDocuments(text);
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
      const unknown = unknownFields(obj, path.join(modules, modelPath(String(apiVersion), String(kind)).replace(/\.js$/, ".d.ts")));
      if (unknown.length) throw new Error(`unknown fields (no such field in ${apiVersion} ${kind}): ${unknown.join(", ")}`);
      const pss = restrictedViolations(obj);
      if (pss.length) throw new Error(`violates the restricted Pod Security Standard: ${pss.join("; ")}`);
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
