#!/usr/bin/env node
// SPDX-License-Identifier: Apache-2.0
// Cancel kdelay tasks and ask their fate from Node.js: the client side of
// the fate protocol, docs/fate-protocol.md "Clients: cancel and status
// from any language", on mysql2 (package.json; `npm ci` here, or run.sh).
//
//   node fate.js [--mysql URL] [--not-before EPOCH_MS] cancel ID...
//   node fate.js [--mysql URL] [--not-before EPOCH_MS] status ID...
//
// A cancel is one plain INSERT of a CANCELLED row (INSERT ... SELECT ...
// FROM DUAL WHERE NOT EXISTS a pending journal in kdelay_reconcile, schema
// 9); a duplicate key (1062) means a row was there first, and reading it
// back tells too late (FIRING/FIRED) or dead (DEAD) from cancelled already.
// While a journal is pending ("While a reconciliation is pending": fires
// made without a claim through a fate-store outage may not be in the fate
// table yet) the insert adds no row; the read-back then answers too late
// or dead, and anything else (no row, CANCELLED) is unknown: nothing was
// recorded, retry. On a schema before 9 (no kdelay_reconcile) the cancel
// is the plain INSERT ... VALUES of the releases before.
//
// One JSON line per id on stdout. cancel: {"id", "outcome": "cancelled" |
// "too_late" | "dead" | "unknown", "fate", "error" (unknown only)};
// status: `kdelayctl status --json ID`'s object. Exit 0 all cancelled /
// answered, 1 any unknown (a pending reconciliation's too) or a connection
// or schema error, else 3 any too_late, else 5 any dead; 2 usage error.
// URL default $KDELAY_MYSQL_URL,
// mysql://user[:password]@host[:port]/db[?ssl-mode=M&ssl-ca=FILE]; the
// password, when the URL has none, from $KDELAY_MYSQL_PASSWORD.
//
// As a module: `conn = await connect(url, password)` (with the schema
// check), `await cancel(conn, id)` -> 'cancelled' | 'too_late' | 'dead' or
// a rejection meaning unknown (a Reconciling error while a reconciliation
// is pending: retry later; retryable(err) says whether a retry on a new
// connection may help), `await status(conn, id)` -> the object above.
'use strict';

const fs = require('fs');
const tls = require('tls');

const PROG = 'fate.js';
// The kdelay release whose docs this client follows, and the schema
// versions it knows: the statements hold from 5 (DEAD, dead_reason) on.
const RELEASE = '0.4.0';
const SCHEMA_MIN = 5;
const SCHEMA_KNOWN = 6;
const SCHEMA_RUNS = 10; // kdelay_fired_run: a FIRING row a run covers is FIRED
const STATUS_SQL = 'SELECT state, fire_at_ms, owner, decided_at_ms, updated_at_ms, dead_reason ' +
  'FROM kdelay_fate WHERE task_id = ?';
// From schema 10 (docs/fate-protocol.md "Runs of delivered claims"): the
// same row and whether a run of delivered claims covers it (1: FIRED).
const COVERED_SQL = "COALESCE(kdelay_fate.state = 'FIRING' " +
  "AND kdelay_fate.owner LIKE '_%:_%:_%' AND kdelay_fate.owner NOT LIKE '%:%:%:%' " +
  "AND CAST(CAST(SUBSTRING_INDEX(kdelay_fate.owner, ':', -1) AS UNSIGNED) AS BINARY) " +
  "= CAST(SUBSTRING_INDEX(kdelay_fate.owner, ':', -1) AS BINARY) " +
  'AND (SELECT r.seq_hi FROM kdelay_fired_run r ' +
  "WHERE r.owner_prefix = CAST(SUBSTRING_INDEX(kdelay_fate.owner, ':', 2) AS BINARY) " +
  "AND r.seq_lo <= CAST(SUBSTRING_INDEX(kdelay_fate.owner, ':', -1) AS UNSIGNED) " +
  'AND kdelay_fate.task_id IS NOT NULL ORDER BY r.seq_lo DESC LIMIT 1) ' +
  ">= CAST(SUBSTRING_INDEX(kdelay_fate.owner, ':', -1) AS UNSIGNED), 0)";
const STATUS_SQL_RUNS = 'SELECT state, fire_at_ms, owner, decided_at_ms, updated_at_ms, dead_reason, ' +
  COVERED_SQL + ' AS delivered FROM kdelay_fate WHERE task_id = ?';
const SSL_MODES = ['DISABLED', 'PREFERRED', 'REQUIRED', 'VERIFY_CA', 'VERIFY_IDENTITY'];
const ATTEMPTS = 3;
const RETRY_PAUSE_MS = 250;

class UsageError extends Error {}
class SchemaError extends Error {}
/** Not known yet: a journal is pending in kdelay_reconcile (fires made
 * without a claim through a fate-store outage may not be applied yet), so
 * the cancel recorded nothing. Retry. */
class Reconciling extends Error {
  constructor() {
    super('not known yet: a reconciliation after a fate-store outage is pending, and this task may ' +
      'have been fired without a claim during it; nothing was recorded: retry (kdelayctl status ' +
      'shows the pending reconciliation)');
  }
}

// The cancel: one statement that inserts CANCELLED only while no journal is
// pending (schema 9). Under REPEATABLE READ its subquery takes shared locks,
// so a concurrent mark waits for it or it for the mark.
const CANCEL_SQL = "INSERT INTO kdelay_fate (task_id, state, decided_at_ms, updated_at_ms) " +
  "SELECT ?, 'CANCELLED', ?, ? FROM DUAL WHERE NOT EXISTS " +
  '(SELECT 1 FROM kdelay_reconcile WHERE pending_since_ms IS NOT NULL)';
// A schema before 9 has no kdelay_reconcile, and no forwarder of a release
// that marks journals runs on it: the plain INSERT of the releases before.
const CANCEL_SQL_BEFORE_9 =
  "INSERT INTO kdelay_fate (task_id, state, decided_at_ms, updated_at_ms) VALUES (?, 'CANCELLED', ?, ?)";

const sleep = (ms) => new Promise((r) => setTimeout(r, ms));

/** mysql://user[:password]@host[:port]/db[?ssl-mode=M&ssl-ca=FILE] ->
 * {user, password (undefined: none), host, port, database, sslMode,
 * sslCa}; throws UsageError naming what is wrong (never the password). */
function parseUrl(url) {
  const bad = (why) => new UsageError(`bad MySQL URL: ${why} (mysql://user[:password]@host[:port]/db)`);
  if (!url.startsWith('mysql://')) throw bad('must start with mysql://');
  // The userinfo ends at the last '@' (a password may hold '@', '/', '?').
  const m = /^mysql:\/\/(.*)@(\[[^\]]*\]|[^@/?:[\]]*)(?::([^@/?]*))?(?:\/([^@/?]*))?(?:\?(.*))?$/s.exec(url);
  if (!m) throw bad('needs user@host');
  const decode = (s, what) => {
    try { return decodeURIComponent(s); } catch { throw bad(`bad percent-encoding in ${what}`); }
  };
  const colon = m[1].indexOf(':');
  const user = decode(colon < 0 ? m[1] : m[1].slice(0, colon), 'the user');
  const password = colon < 0 ? undefined : decode(m[1].slice(colon + 1), 'the password');
  if (!user) throw bad('the user name is empty');
  let host = m[2];
  if (host.startsWith('[')) host = host.slice(1, -1); // [IPv6]
  if (!host) throw bad('the host is empty');
  let port = 3306;
  if (m[3] !== undefined) {
    port = /^\d{1,5}$/.test(m[3]) ? Number(m[3]) : 0;
    if (port < 1 || port > 65535) throw bad('the port must be 1..65535');
  }
  const p = { user, password, host, port, database: m[4] || 'kdelay', sslMode: 'PREFERRED', sslCa: undefined };
  for (const kv of m[5] === undefined ? [] : m[5].split('&')) {
    const eq = kv.indexOf('=');
    const name = eq < 0 ? kv : kv.slice(0, eq);
    const value = eq < 0 ? '' : decode(kv.slice(eq + 1), 'a URL parameter');
    if (name === 'ssl-mode' && SSL_MODES.includes(value.toUpperCase())) p.sslMode = value.toUpperCase();
    else if (name === 'ssl-mode') throw bad(`ssl-mode must be one of ${SSL_MODES.join(', ')}`);
    else if (name === 'ssl-ca' && value) p.sslCa = value;
    else throw bad(`unknown URL parameter ${JSON.stringify(name)} (known: ssl-mode, ssl-ca=FILE)`);
  }
  if (p.sslMode.startsWith('VERIFY') && !p.sslCa) throw bad(`ssl-mode=${p.sslMode} needs ssl-ca=FILE`);
  return p;
}

/** The URL as it may be shown: its password replaced by ***. */
function redact(url) {
  return url.replace(/^(mysql:\/\/[^:@]*:)(.*)(@[^@]*)$/s, '$1***$3');
}

/** Errors worth a retry on a new connection: the connection was lost
 * (client 2006, 2013 and mysql2's names for it), the server is shutting
 * down (1053) or read-only (1290, 1836: a failover is under way), a lock
 * wait timed out or a deadlock (1205, 1213). */
function retryable(err) {
  return [2006, 2013, 1053, 1290, 1836, 1205, 1213].includes(err.errno) ||
    ['PROTOCOL_CONNECTION_LOST', 'ECONNRESET', 'EPIPE'].includes(err.code) ||
    // mysql2's "server has gone away": a statement on a connection that broke while idle
    (err.fatal === true && /closed state/.test(err.message));
}

/** Refuses a schema these statements do not hold for (SchemaError). */
async function schemaCheck(conn) {
  let rows;
  try {
    [rows] = await conn.query('SELECT version, compat_floor FROM kdelay_schema');
  } catch (e) {
    if (e.errno === 1146) throw new SchemaError('the kdelay tables are missing: run `kdelayctl db migrate`');
    if (e.errno !== 1054) throw e;
    [rows] = await conn.query('SELECT version FROM kdelay_schema'); // before version 6: no floors yet
  }
  // X.Y.Z -> [X, Y, Z] compared numerically; null when not X.Y.Z.
  const release = (s) => (/^\d+\.\d+\.\d+$/.test(s || '') ? s.split('.').map(Number) : null);
  const cmp = (a, b) => a.map((x, i) => x - b[i]).find((d) => d !== 0) || 0;
  const me = release(RELEASE);
  const top = Math.max(0, ...rows.map((r) => Number(r.version)));
  conn.kdelaySchema = top; // status reads it: from 10 a run may cover a FIRING row
  if (top < SCHEMA_MIN)
    throw new SchemaError(`database schema is version ${top}, older than ${SCHEMA_MIN}: run \`kdelayctl db migrate\``);
  for (const r of rows) {
    if (Number(r.version) <= SCHEMA_KNOWN) continue;
    const floor = release(r.compat_floor);
    if (!floor)
      throw new SchemaError(`database schema is version ${top}, newer than this client knows ` +
        `(${SCHEMA_KNOWN}), and version ${r.version} records no release floor: upgrade the client`);
    if (cmp(floor, me) > 0)
      throw new SchemaError(`database schema is version ${top}, which needs a client for kdelay ` +
        `${r.compat_floor} or newer; this one follows ${RELEASE}: upgrade the client`);
  }
}

/** A connection to the fate table's primary, schema checked. url as
 * above; password used when the URL has none (undefined: none). */
async function connect(url, password) {
  const mysql = require('mysql2/promise');
  const p = parseUrl(url);
  const options = {
    host: p.host, port: p.port, user: p.user, database: p.database,
    password: p.password !== undefined ? p.password : password,
    charset: 'utf8mb4',
    connectTimeout: 10000,
  };
  if (p.sslMode !== 'DISABLED') {
    // As kdelay's C library (and MySQL's clients): a CA given is checked
    // against the server's chain in every mode; VERIFY_IDENTITY adds the
    // host name. PREFERRED and REQUIRED without a CA encrypt only.
    options.ssl = { rejectUnauthorized: Boolean(p.sslCa), verifyIdentity: p.sslMode === 'VERIFY_IDENTITY' };
    if (p.sslCa) options.ssl.ca = fs.readFileSync(p.sslCa);
  }
  let conn;
  try {
    conn = await mysql.createConnection(options);
  } catch (e) {
    // PREFERRED: TLS when the server offers it, else plain.
    if (p.sslMode !== 'PREFERRED' || e.code !== 'HANDSHAKE_NO_SSL_SUPPORT') throw e;
    delete options.ssl;
    conn = await mysql.createConnection(options);
  }
  // mysql2 checks no name for a host given as an IP address (and checks
  // 'localhost' instead when the certificate names that): check the
  // host as given, IP or name, against the server's certificate.
  const tlsSocket = conn.connection.stream;
  const wrongName = p.sslMode === 'VERIFY_IDENTITY' &&
    (tlsSocket.getPeerCertificate ? tls.checkServerIdentity(p.host, tlsSocket.getPeerCertificate())
      : new Error('no TLS'));
  if (wrongName) {
    conn.destroy();
    throw wrongName;
  }
  // A connection that breaks while idle reports it here; the next
  // statement then fails as "closed state" and is retried.
  conn.on('error', () => {});
  try {
    // Each statement its own transaction, whatever the server's default.
    await conn.query('SET autocommit = 1');
    await schemaCheck(conn);
  } catch (e) {
    conn.destroy();
    throw e;
  }
  return conn;
}

/** Throws UsageError unless id is 1..128 bytes of UTF-8 without control characters. */
function checkId(id) {
  const raw = Buffer.from(id, 'utf8');
  if (raw.length < 1 || raw.length > 128 || raw.some((c) => c < 0x20 || c === 0x7f) || raw.toString('utf8') !== id)
    throw new UsageError(`task id ${JSON.stringify(id)} must be 1..128 bytes of UTF-8 without control characters`);
}

/** The fate row of id as `kdelayctl status --json` prints it: a FIRING
 * row a run of delivered claims covers (schema 10) answers FIRED. */
async function status(conn, id) {
  if (conn.kdelaySchema === undefined) { // a connection schemaCheck did not see
    const [v] = await conn.query('SELECT COALESCE(MAX(version), 0) AS v FROM kdelay_schema');
    conn.kdelaySchema = Number(v[0].v);
  }
  const runs = conn.kdelaySchema >= SCHEMA_RUNS;
  // The id is bound as bytes (a Buffer: sent as binary, never re-encoded).
  const [rows] = await conn.execute(runs ? STATUS_SQL_RUNS : STATUS_SQL, [Buffer.from(id, 'utf8')]);
  const r = rows[0];
  const num = (v) => (v === null || v === undefined ? null : Number(v));
  const covered = runs && r && r.state === 'FIRING' && Number(r.delivered) === 1;
  const out = {
    id,
    fate: r ? (covered ? 'FIRED' : r.state) : 'UNDECIDED',
    fire_at_ms: num(r && r.fire_at_ms),
    decided_at_ms: num(r && r.decided_at_ms),
    updated_at_ms: num(r && r.updated_at_ms),
    owner: (r && r.owner) || null,
  };
  if (r && r.dead_reason) out.dead_reason = r.dead_reason;
  return out;
}

/** The cancel's INSERT: rows inserted (1, or 0 while a journal is
 * pending), null when a row exists (duplicate key). */
async function insertCancelled(conn, id, now) {
  // Schema 9's statement; when its kdelay_reconcile is missing (error 1146
  // naming it: a schema before 9), the one before.
  for (const sql of [CANCEL_SQL, CANCEL_SQL_BEFORE_9]) {
    try {
      // A plain INSERT, never INSERT IGNORE: only "row exists" (1062) may
      // pass; every other problem stays an error.
      const [res] = await conn.execute(sql, [Buffer.from(id, 'utf8'), now, now]);
      return res.affectedRows;
    } catch (e) {
      if (e.errno === 1062) return null;
      if (sql === CANCEL_SQL_BEFORE_9 || e.errno !== 1146 || !/kdelay_reconcile/.test(e.message)) throw e;
    }
  }
}

/** Cancels id: {outcome: 'cancelled' | 'too_late' | 'dead', fate: the
 * state read back, or null when the insert itself succeeded}. Rejects
 * with Reconciling when a journal is pending and the row (if any) is
 * neither FIRING, FIRED nor DEAD. */
async function cancelDetail(conn, id) {
  const inserted = await insertCancelled(conn, id, Date.now());
  if (inserted === 1) return { outcome: 'cancelled', fate: null };
  // The row decides, if it can.
  const { fate } = await status(conn, id);
  const outcome = { FIRING: 'too_late', FIRED: 'too_late', DEAD: 'dead' }[fate];
  if (outcome) return { outcome, fate };
  if (inserted === 0) throw new Reconciling(); // nothing inserted, no row or CANCELLED: a journal is pending
  if (fate === 'CANCELLED') return { outcome: 'cancelled', fate }; // a row was there first
  throw new Error(`the row of ${JSON.stringify(id)} existed, then was gone (db gc?): ask again`);
}

/** 'cancelled' | 'too_late' | 'dead'; a rejection means unknown. */
async function cancel(conn, id) {
  return (await cancelDetail(conn, id)).outcome;
}

const USAGE = `usage: ${PROG} [--mysql URL] [--not-before EPOCH_MS] cancel|status ID...`;

function parseArgs(argv) {
  const a = { url: process.env.KDELAY_MYSQL_URL, notBefore: undefined };
  let i = 0;
  for (; i < argv.length && argv[i].startsWith('-'); i++) {
    const [opt, inline] = argv[i].startsWith('--') && argv[i].includes('=')
      ? [argv[i].slice(0, argv[i].indexOf('=')), argv[i].slice(argv[i].indexOf('=') + 1)] : [argv[i], undefined];
    if (opt === '-h' || opt === '--help') return { help: true };
    if (opt !== '--mysql' && opt !== '--not-before') throw new UsageError(`unknown option ${JSON.stringify(argv[i])}`);
    const val = inline !== undefined ? inline : argv[++i];
    if (val === undefined) throw new UsageError(`${opt} needs a value`);
    if (opt === '--mysql') a.url = val;
    else if (/^\d{1,16}$/.test(val)) a.notBefore = Number(val);
    else throw new UsageError(`--not-before ${JSON.stringify(val)}: want epoch milliseconds`);
  }
  a.command = argv[i];
  a.ids = argv.slice(i + 1);
  if (a.command !== 'cancel' && a.command !== 'status')
    throw new UsageError(a.command === undefined ? 'a command is required: cancel or status'
      : `unknown command ${JSON.stringify(a.command)} (cancel or status)`);
  if (!a.ids.length) throw new UsageError('at least one task ID is required');
  a.ids.forEach(checkId);
  if (!a.url) throw new UsageError('no --mysql URL and KDELAY_MYSQL_URL is not set');
  parseUrl(a.url);
  return a;
}

async function main(argv) {
  let a;
  const env = process.env.KDELAY_MYSQL_PASSWORD;
  // Never print the password, not even inside a driver's message.
  const clean = (msg) => {
    const pw = a && a.url ? parseUrl(a.url).password : undefined;
    for (const secret of [pw, env]) if (secret) msg = msg.split(secret).join('***');
    return msg;
  };
  const error = (msg) => process.stderr.write(`${PROG}: error: ${clean(msg)}\n`);
  try {
    a = parseArgs(argv);
  } catch (e) {
    if (!(e instanceof UsageError)) throw e;
    error(e.message);
    process.stderr.write(USAGE + '\n');
    return 2;
  }
  if (a.help) {
    process.stdout.write(USAGE + '\n');
    return 0;
  }
  const where = redact(a.url);
  let conn;
  try {
    conn = await connect(a.url, env);
  } catch (e) {
    error(e instanceof SchemaError ? e.message : `cannot connect to MySQL at ${where}: ${e.message}`);
    return 1;
  }
  if (a.notBefore !== undefined) await sleep(Math.max(0, a.notBefore - Date.now()));

  const seen = new Set();
  for (const id of a.ids) {
    let answer, last;
    for (let attempt = 1; attempt <= ATTEMPTS && !answer; attempt++) {
      try {
        if (!conn) conn = await connect(a.url, env);
        answer = a.command === 'cancel' ? await cancelDetail(conn, id) : await status(conn, id);
      } catch (e) {
        last = e; // a failed reconnect too: unknown, and the next id tries again
        if (retryable(e)) {
          if (conn) conn.destroy(); // read-only or broken: only a new connection helps
          conn = null;
        } else if (!(e instanceof Reconciling)) { // a pending reconciliation: ask again, same connection
          break;
        }
        if (attempt < ATTEMPTS) await sleep(RETRY_PAUSE_MS);
      }
    }
    if (answer && a.command === 'cancel') {
      console.log(JSON.stringify({ id, outcome: answer.outcome, fate: answer.fate }));
      seen.add(answer.outcome);
    } else if (answer) {
      console.log(JSON.stringify(answer));
    } else {
      const again = retryable(last) || last instanceof Reconciling;
      const msg = clean(last.message) + (again ? ` (after ${ATTEMPTS} attempts)` : '');
      error(`${a.command} ${JSON.stringify(id)}: ${msg}`);
      console.log(JSON.stringify(a.command === 'cancel'
        ? { id, outcome: 'unknown', fate: null, error: msg } : { id, error: msg }));
      seen.add('unknown');
    }
  }
  if (conn) await conn.end().catch(() => {});
  if (seen.has('unknown')) return 1;
  return seen.has('too_late') ? 3 : seen.has('dead') ? 5 : 0;
}

module.exports = {
  connect, cancel, cancelDetail, status, retryable, parseUrl, redact, checkId, Reconciling, SchemaError, UsageError,
};

if (require.main === module) {
  main(process.argv.slice(2)).then((rc) => process.exit(rc), (e) => {
    process.stderr.write(`${PROG}: error: ${e.message}\n`);
    process.exit(1);
  });
}
