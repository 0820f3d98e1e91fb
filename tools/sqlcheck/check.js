#!/usr/bin/env node
// SPDX-License-Identifier: Apache-2.0
// Parses SQL statements against a MySQL 8 grammar (node-sql-parser in its
// MySQL mode) and rejects constructs MySQL 8 lacks or deprecates, so that
// kdelay runs on MySQL 8.0/8.4 as well as MariaDB without a MySQL server
// here (tools/sqlcheck/README.md).
//
//   node check.js --file FILE          statements as kdelayctl prints them
//                                      (`db migrate --print`, `db grants`)
//   node check.js --general-log FILE   every query a MariaDB general log holds
//                                      (TCP clients: kdelay's, not stack.sh's)
//   node check.js --self-test          planted statements must fail, good pass
//
// Prints one line per finding and a summary line; exit 1 on any finding,
// 2 on a usage error.
'use strict';
const fs = require('fs');
const path = require('path');
const { Parser } = require('node-sql-parser');

const parser = new Parser();

// Constructs the grammar accepts but MySQL 8 deprecates or rejects, or
// that only MariaDB has; each with the reason printed.
const TEXT_RULES = [
  [/\bADD\s+(COLUMN|INDEX|KEY)\s+IF\s+NOT\s+EXISTS\b/i,
   'ADD COLUMN/INDEX IF NOT EXISTS is MariaDB only (use a -- kdelay: unless directive)'],
  [/\bDROP\s+(COLUMN|INDEX|KEY)\s+IF\s+EXISTS\b/i,
   'DROP COLUMN/INDEX IF EXISTS is MariaDB only'],
  [/(^|[^A-Za-z_])BINARY\s+[A-Za-z_`(]/i,
   'the BINARY operator is deprecated in MySQL 8.0.27 (use CAST(x AS BINARY))'],
  [/\bSQL_CALC_FOUND_ROWS\b|\bFOUND_ROWS\s*\(/i,
   'SQL_CALC_FOUND_ROWS/FOUND_ROWS() are deprecated in MySQL 8.0.17'],
  [/\bCHARACTER\s+SET\s+utf8\b(?!mb4)/i,
   'utf8 (utf8mb3) is deprecated in MySQL 8.0 (use utf8mb4)'],
  [/\bRETURNING\b/i, 'RETURNING is MariaDB only'],
];

// Statements MySQL 8 documents whose form node-sql-parser 5.4.0 does not
// parse; matched whole, counted as "gaps" and not rejected. The test
// harness sends the DROPs (its databases and users); MariaDB Connector/J
// (examples/java) sends the SET when it connects — the driver's own, not
// kdelay's; MySQL's grammar takes NAMES in a SET list. test_fate kills a
// store's connection and reads server and session counters (KILL, SHOW
// GLOBAL STATUS, SHOW SESSION STATUS: MySQL 8 statements too); the bench
// analyzes its fate table before reading its size. libkdelay's init command sets its
// session's isolation level (MySQL 8.0 Reference Manual, "SET
// TRANSACTION Statement"), which the grammar lacks.
const GRAMMAR_GAPS = [
  /^SET SESSION TRANSACTION ISOLATION LEVEL REPEATABLE READ$/i,
  /^DROP DATABASE (IF EXISTS )?`\w+`$/i, // a quoted name (unquoted parses)
  /^DROP USER (IF EXISTS )?'[^']*'@'[^']*'$/i,
  /^KILL \d+$/i,
  /^SHOW (GLOBAL|SESSION) STATUS LIKE '\w+'$/i,
  // the bench's burst section, before it reads the fate table's size
  // (MySQL 8.0 Reference Manual, "ANALYZE TABLE Statement")
  /^ANALYZE TABLE `\w+`\.kdelay_fate$/i,
  // stack.sh's own on a TLS-only MariaDB (its client comes over TCP
  // there): the root grant of `up` and `mysql-readonly on|off`
  /^GRANT ALL PRIVILEGES ON \*\.\* TO '[^']*'@'[^']*' WITH GRANT OPTION$/i,
  /^SET GLOBAL read_only = (ON|OFF)$/i,
  // (matched as a shape: its string literals are folded)
  /^set sql_mode=CONCAT\(@@sql_mode,[^()]*\),session_track_system_variables = CONCAT\(@@global\.session_track_system_variables,[^()]*\),NAMES utf8mb4$/i,
];

function walk(node, visit) {
  if (!node || typeof node !== 'object') return;
  visit(node);
  for (const k of Object.keys(node)) walk(node[k], visit);
}

function funcName(node) {
  const n = node && node.name;
  if (!n) return '';
  if (typeof n === 'string') return n;
  if (Array.isArray(n.name)) return n.name.map((x) => x.value).join('.');
  return '';
}

// The findings for one statement: [] when it is MySQL 8 SQL.
function check(sql) {
  const found = [];
  for (const [re, why] of TEXT_RULES) if (re.test(sql)) found.push(why);
  let ast;
  try {
    ast = parser.astify(sql, { database: 'MySQL' });
  } catch (e) {
    const msg = String(e.message || e);
    found.push('not MySQL 8 grammar: ' + (msg.length > 160 ? msg.slice(0, 157) + '...' : msg));
    return found;
  }
  for (const stmt of Array.isArray(ast) ? ast : [ast]) {
    if (!stmt || !stmt.on_duplicate_update) continue;
    walk(stmt.on_duplicate_update, (n) => {
      if (n.type === 'function' && /^values$/i.test(funcName(n)))
        found.push('VALUES() in ON DUPLICATE KEY UPDATE is deprecated in MySQL 8.0.20');
    });
  }
  return found;
}

// The statements of a file kdelayctl printed (`db migrate --print`,
// `db grants`): each ends at a ';' that ends its line, after its comment
// lines. The migrations are split by the migrator itself (kdelayctl
// prints what it would send), not here.
function splitStatements(text) {
  const out = [];
  let cur = [];
  for (const line of text.split('\n')) {
    if (!cur.length && (/^\s*$/.test(line) || /^\s*--/.test(line))) continue;
    const m = /^(.*);\s*\r?$/.exec(line);
    cur.push(m ? m[1] : line);
    if (m) {
      out.push(cur.join('\n'));
      cur = [];
    }
  }
  if (cur.join('').trim()) out.push(cur.join('\n'));
  return out;
}

// Literals to placeholders and repeated rows, items and WHENs to one, so
// that a run's thousands of claims are a handful of statement shapes.
function shape(sql) {
  let s = sql
    .replace(/[xX]'[0-9a-fA-F]*'|'(?:[^'\\]|\\.|'')*'/g, (t) => (t[0] === "'" ? "'s'" : "x'00'"))
    .replace(/(^|[^A-Za-z0-9_.'])-?\d+(?:\.\d+)?(?![A-Za-z0-9_])/g, '$10')
    .replace(/\s+/g, ' ')
    .trim();
  for (let changed = true; changed;) {
    changed = false;
    const next = collapseGroups(s)
      .replace(/((?: WHEN x'00' THEN (?:NOW\(0\) \+ INTERVAL 0 MICROSECOND|NULL|0|x'00'|'s')))\1+/g, '$1')
      .replace(/x'00'(?: ?, ?x'00')+/g, "x'00'");
    if (next !== s) {
      s = next;
      changed = true;
    }
  }
  return s;
}

// "(g), (g), (g)" or "(g) OR (g)" to "(g)", for balanced groups g.
function collapseGroups(s) {
  let out = '';
  for (let i = 0; i < s.length;) {
    if (s[i] !== '(') {
      out += s[i++];
      continue;
    }
    const end = groupEnd(s, i);
    if (end < 0) return out + s.slice(i);
    const g = s.slice(i, end + 1);
    let j = end + 1;
    for (;;) {
      const m = /^(?: ?, ?| OR )/.exec(s.slice(j));
      if (!m || s.slice(j + m[0].length, j + m[0].length + g.length) !== g) break;
      j += m[0].length + g.length;
    }
    out += g[0];
    i += 1;
    if (j > end + 1) {
      out += collapseGroups(g.slice(1));
      i = j;
    }
  }
  return out;
}

function groupEnd(s, i) {
  let depth = 0;
  let quote = false;
  for (let k = i; k < s.length; k++) {
    const c = s[k];
    if (quote) {
      if (c === "'") quote = false;
    } else if (c === "'") quote = true;
    else if (c === '(') depth++;
    else if (c === ')' && --depth === 0) return k;
  }
  return -1;
}

// The queries of TCP connections in a MariaDB general log (stack.sh's own
// admin SQL goes over the unix socket), statements spanning lines joined.
function generalLogQueries(text) {
  const head = /^(?:\d{6}\s+\d{1,2}:\d{2}:\d{2})?\s+(\d+)\s+([A-Za-z]+(?: [A-Za-z]+)?)\t?(.*)$/;
  const tcp = new Set();
  const out = [];
  let cur = null;
  for (const line of text.split('\n')) {
    // A restart of the server writes its header again: it ends the last
    // query, and connection ids start over.
    if (/, Version: .* started with:$/.test(line) || /^Tcp port: /.test(line) || /^Time\s+Id\s+Command/.test(line)) {
      if (cur) out.push(cur);
      cur = null;
      tcp.clear();
      continue;
    }
    const m = head.exec(line);
    if (m && /^(Query|Connect|Quit|Init DB|Prepare|Execute|Close stmt|Field List|Statistics|Ping|Change user|Refresh|Shutdown|Kill|Set option|Reset stmt)$/.test(m[2])) {
      if (cur) out.push(cur);
      cur = null;
      const [, id, cmd, arg] = m;
      // TCP, or TLS over TCP (a TLS-only server logs "using SSL/TLS")
      if (cmd === 'Connect' && /using (TCP\/IP|SSL\/TLS)/.test(arg)) tcp.add(id);
      else if (cmd === 'Query' && tcp.has(id)) cur = arg;
      else if (cmd === 'Prepare' && tcp.has(id)) cur = arg.replace(/^\[\d+\]\s*/, '');
    } else if (cur !== null) {
      cur += '\n' + line;
    }
  }
  if (cur) out.push(cur);
  return out;
}

function report(label, statements) {
  const shapes = new Map();
  for (const sql of statements) {
    const s = shape(sql);
    if (!shapes.has(s)) shapes.set(s, sql);
  }
  let bad = 0;
  let gaps = 0;
  for (const [s, sql] of shapes) {
    if (GRAMMAR_GAPS.some((re) => re.test(s))) {
      gaps++;
      continue;
    }
    const found = check(s);
    if (!found.length) continue;
    bad++;
    const text = sql.replace(/\s+/g, ' ');
    for (const why of found)
      console.log(`level=error prog=sqlcheck source=${label} reason=${JSON.stringify(why)} sql=${JSON.stringify(text.length > 300 ? text.slice(0, 297) + '...' : text)}`);
  }
  console.log(`level=info prog=sqlcheck source=${label} statements=${statements.length} shapes=${shapes.size} grammar_gaps=${gaps} rejected=${bad}`);
  return bad;
}

const SELF_BAD = [
  'ALTER TABLE kdelay_fate ADD COLUMN IF NOT EXISTS lease_until DATETIME(3) NULL',
  'ALTER TABLE kdelay_fate ADD INDEX IF NOT EXISTS kdelay_fate_state (state, updated_at_ms)',
  'ALTER TABLE kdelay_fate DROP INDEX IF EXISTS kdelay_fate_state',
  "INSERT INTO kdelay_fate (task_id, owner) VALUES (x'01', 'a') ON DUPLICATE KEY UPDATE owner = VALUES(owner)",
  "UPDATE kdelay_fate SET owner = 'a' WHERE BINARY owner = 'b'",
  "UPDATE kdelay_fate SET owner = 'a' WHERE owner <=> NULL AND BINARY(owner) = 'b'",
  'SELECT SQL_CALC_FOUND_ROWS task_id FROM kdelay_fate LIMIT 1',
  "DELETE FROM kdelay_fate WHERE task_id = x'01' RETURNING task_id",
];
const SELF_GOOD = [
  'ALTER TABLE kdelay_fate ADD COLUMN lease_until DATETIME(3) NULL',
  'ALTER TABLE kdelay_fate DROP INDEX kdelay_fate_state',
  "UPDATE kdelay_fate SET lease_until = CASE task_id WHEN x'01' THEN NOW(3) + INTERVAL 30000 MICROSECOND ELSE lease_until END WHERE state = 'FIRING' AND ((task_id = x'01' AND CAST(owner AS BINARY) = x'6162'))",
  "INSERT IGNORE INTO kdelay_fate (task_id, state) VALUES (x'01', 'FIRING'), (x'02', 'FIRING')",
  // a run of delivered claims, and the status that reads it (schema 10)
  "INSERT IGNORE INTO kdelay_fired_run (owner_prefix, seq_lo, seq_hi, created_at_ms) VALUES (x'613a62',1,5,0),(x'613a62',7,9,0)",
  "SELECT state, COALESCE(kdelay_fate.state = 'FIRING' AND kdelay_fate.owner LIKE '_%:_%:_%' AND kdelay_fate.owner NOT LIKE '%:%:%:%' AND CAST(CAST(SUBSTRING_INDEX(kdelay_fate.owner, ':', -1) AS UNSIGNED) AS BINARY) = CAST(SUBSTRING_INDEX(kdelay_fate.owner, ':', -1) AS BINARY) AND (SELECT r.seq_hi FROM kdelay_fired_run r WHERE r.owner_prefix = CAST(SUBSTRING_INDEX(kdelay_fate.owner, ':', 2) AS BINARY) AND r.seq_lo <= CAST(SUBSTRING_INDEX(kdelay_fate.owner, ':', -1) AS UNSIGNED) AND kdelay_fate.task_id IS NOT NULL ORDER BY r.seq_lo DESC LIMIT 1) >= CAST(SUBSTRING_INDEX(kdelay_fate.owner, ':', -1) AS UNSIGNED), 0) FROM kdelay_fate WHERE task_id = x'01'",
];

function selfTest() {
  let wrong = 0;
  for (const sql of SELF_BAD)
    if (!check(sql).length) {
      console.log(`level=error prog=sqlcheck self_test=accepted_bad sql=${JSON.stringify(sql)}`);
      wrong++;
    }
  for (const sql of SELF_GOOD) {
    const found = check(sql);
    if (found.length) {
      console.log(`level=error prog=sqlcheck self_test=rejected_good sql=${JSON.stringify(sql)} reason=${JSON.stringify(found[0])}`);
      wrong++;
    }
  }
  const folded = shape("SELECT a FROM t WHERE id IN (x'01',x'02',x'03') OR (a = 1 AND (b IS NULL)) OR (a = 2 AND (b IS NULL))");
  if (folded !== "SELECT a FROM t WHERE id IN (x'00') OR (a = 0 AND (b IS NULL))") {
    console.log(`level=error prog=sqlcheck self_test=shape got=${JSON.stringify(folded)}`);
    wrong++;
  }
  console.log(`level=info prog=sqlcheck self_test=done bad=${SELF_BAD.length} good=${SELF_GOOD.length} wrong=${wrong}`);
  return wrong;
}

function main(argv) {
  const usage = 'usage: check.js --file FILE | --general-log FILE | --self-test';
  if (argv.length === 1 && argv[0] === '--self-test') return selfTest() ? 1 : 0;
  if (argv.length !== 2) {
    console.error(usage);
    return 2;
  }
  const [opt, arg] = argv;
  if (opt === '--file') return report(path.basename(arg), splitStatements(fs.readFileSync(arg, 'utf8'))) ? 1 : 0;
  if (opt === '--general-log') {
    const queries = generalLogQueries(fs.readFileSync(arg, 'utf8'));
    if (!queries.length) {
      console.error(`check.js: no queries of TCP clients in "${arg}"`);
      return 1;
    }
    return report('general-log', queries) ? 1 : 0;
  }
  console.error(usage);
  return 2;
}

process.exitCode = main(process.argv.slice(2));
