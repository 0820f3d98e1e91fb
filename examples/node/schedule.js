#!/usr/bin/env node
// SPDX-License-Identifier: Apache-2.0
// Schedule a kdelay task from Node.js, by the wire format alone.
//
// A task is one Kafka record in the tier topic `<prefix>.tier.<tier>` with
// the kdelay headers (docs/wire-format.md): kdelay-v, kdelay-id,
// kdelay-target and kdelay-fire-at. Key, value and other headers are the
// user's and are delivered unchanged to the target topic when the task is
// due. The tier is chosen as docs/wire-format.md "Choosing the tier" says:
// the largest tier delay <= fire-at - now, else the smallest tier.
//
// Needs kafkajs (package.json; `npm ci` here, or run.sh). As a command,
// with examples/python/schedule.py's options:
//
//   node schedule.js --brokers 127.0.0.1:19092 --topic orders.reminders \
//       --key order-42 --value 'ship it' --delay 30s --header trace=abc
//
// prints the task id (a ULID unless --id gives one); exit 0 once Kafka has
// acknowledged the record, 1 when it did not, 2 on bad arguments. As a
// module: `await schedule(producer, prefix, tiers, target, key, value,
// fireAtMs, {taskId, headers})` on your own connected kafkajs producer
// (idempotent: true; see makeProducer) returns the task id once Kafka has
// acknowledged the record.
'use strict';

const crypto = require('crypto');

// kdelay's default ladder (property `tiers`, src/lib/shared/conf_props.c).
const DEFAULT_TIERS = '1s,30s,1m,1m30s,2m,3m,5m,8m,12m,20m,30m,45m,1h,1h30m,4h,6h,16h,1d,2d12h,7d';
const DEFAULT_PREFIX = 'kdelay';
const PROG = 'schedule.js';

// Durations and times are BigInt: an epoch-ms fire-at may be up to 2^63-1.
const UNITS = [['d', 86400000n], ['h', 3600000n], ['m', 60000n], ['s', 1000n], ['ms', 1n]];
const TOPIC = /^[A-Za-z0-9._-]{1,249}$/;
const CROCKFORD = '0123456789ABCDEFGHJKMNPQRSTVWXYZ';
const nowMs = () => BigInt(Date.now());

/** '250ms', '30s', '1h30m' (largest unit first) -> milliseconds (BigInt). */
function parseDuration(text) {
  if (!text) throw new RangeError('empty duration');
  const re = /(\d+)(ms|d|h|m|s)/y;
  let total = 0n, last = -1, m;
  re.lastIndex = 0;
  while (re.lastIndex < text.length) {
    if (!(m = re.exec(text))) throw new RangeError(`'${text}' is not a duration (e.g. 30s, 5m)`);
    const unit = UNITS.findIndex(([u]) => u === m[2]);
    if (unit <= last) throw new RangeError(`'${text}': units must come largest first, once`);
    total += BigInt(m[1]) * UNITS[unit][1];
    last = unit;
  }
  return total;
}

/** Milliseconds -> canonical duration text, the tier's name (90000n -> '1m30s'). */
function formatDuration(ms) {
  if (ms === 0n) return '0s';
  let out = '';
  for (const [suffix, size] of UNITS) {
    if (ms >= size) {
      out += `${ms / size}${suffix}`;
      ms %= size;
    }
  }
  return out;
}

/** '1s,5s,1m' -> [[1000n, '1s'], [5000n, '5s'], [60000n, '1m']], ascending. */
function parseTiers(text) {
  const set = new Set(text.split(',').map((t) => parseDuration(t.trim())));
  const tiers = [...set].sort((a, b) => (a < b ? -1 : a > b ? 1 : 0));
  if (!tiers.length || tiers[0] <= 0n) throw new RangeError(`bad tier list '${text}'`);
  return tiers.map((ms) => [ms, formatDuration(ms)]);
}

/** The largest tier whose delay <= remainingMs, else the smallest. */
function chooseTier(tiers, remainingMs) {
  let name = tiers[0][1];
  for (const [delay, tier] of tiers) if (delay <= remainingMs) name = tier;
  return name;
}

// A ULID as the library makes them: 48-bit ms time, 80 random bits, 26
// Crockford base32 digits, strictly increasing within this process (the
// random part counts up inside a millisecond).
let ulidLast = [-1n, 0n];
function newUlid() {
  const now = nowMs();
  if (now <= ulidLast[0]) {
    ulidLast[1] = (ulidLast[1] + 1n) % (1n << 80n);
    if (ulidLast[1] === 0n) ulidLast[0] += 1n;
  } else {
    ulidLast = [now, BigInt('0x' + crypto.randomBytes(10).toString('hex'))];
  }
  const n = (ulidLast[0] << 80n) | ulidLast[1];
  let out = '';
  for (let i = 25; i >= 0; i--) out += CROCKFORD[Number((n >> BigInt(5 * i)) & 31n)];
  return out;
}

/** Throws RangeError for what a forwarder would dead-letter, or what the
 * library refuses (a user header in the reserved kdelay- namespace). */
function checkTask(prefix, target, fireAtMs, taskId, headers) {
  if (!TOPIC.test(target) || target === '.' || target === '..')
    throw new RangeError(`invalid target topic '${target}'`);
  if (target.startsWith(prefix + '.tier.') || target === prefix + '.dead')
    throw new RangeError(`target '${target}' is one of kdelay's own topics`);
  if (!(fireAtMs >= 0n && fireAtMs < 1n << 63n)) throw new RangeError('fire-at out of range');
  if (taskId !== undefined && taskId !== null) {
    const raw = Buffer.from(taskId, 'utf8');
    if (raw.length < 1 || raw.length > 128 || raw.some((c) => c < 0x20 || c === 0x7f))
      throw new RangeError('task id must be 1..128 bytes of UTF-8 without control characters');
  }
  for (const [name] of headers || [])
    if (name.startsWith('kdelay-')) throw new RangeError(`header '${name}': the kdelay- namespace is reserved`);
}

/** Produces the task record on `producer` (a connected kafkajs producer
 * made with idempotent: true; acks=all is sent with the record) and
 * resolves to the task id once Kafka has acknowledged it; rejects when it
 * did not (a RangeError: the task itself is invalid).
 *
 * prefix: the topic prefix ('kdelay'); tiers: parseTiers() output;
 * key, value: string, Buffer or null; fireAtMs: epoch ms (number or
 * BigInt); headers: [[name, value]] user headers, names not starting
 * 'kdelay-' (a name may repeat; values string or Buffer). */
async function schedule(producer, prefix, tiers, target, key, value, fireAtMs, { taskId, headers } = {}) {
  const fireAt = BigInt(fireAtMs); // throws RangeError on a fraction
  taskId = taskId !== undefined && taskId !== null ? taskId : newUlid();
  checkTask(prefix, target, fireAt, taskId, headers);
  const tier = chooseTier(tiers, fireAt - nowMs());
  // kafkajs takes headers as an object; an array value sends the header
  // once per element, in order, so a repeated user header stays repeated.
  const hdrs = {
    'kdelay-v': Buffer.from('1'),
    'kdelay-id': Buffer.from(taskId, 'utf8'),
    'kdelay-target': Buffer.from(target, 'utf8'),
    'kdelay-fire-at': Buffer.from(String(fireAt), 'ascii'),
  };
  for (const [name, val] of headers || []) {
    const v = Buffer.isBuffer(val) ? val : Buffer.from(String(val), 'utf8');
    hdrs[name] = name in hdrs ? [].concat(hdrs[name], v) : v;
  }
  await producer.send({
    topic: `${prefix}.tier.${tier}`,
    acks: -1, // all in-sync replicas
    timeout: 30000,
    messages: [{ key: key ?? null, value: value ?? null, headers: hdrs }],
  });
  return taskId;
}

/** An idempotent kafkajs producer, acks=all, the Java client's murmur2
 * partitioner for keyed records (kafkajs' DefaultPartitioner, named so it
 * does not warn), logging to stderr so stdout carries only the task id. */
function makeProducer(brokers) {
  const { Kafka, Partitioners, logLevel } = require('kafkajs');
  const toStderr = () => ({ namespace, label, log }) =>
    process.stderr.write(`${PROG}: kafkajs ${label} [${namespace}] ${log.message}${log.error ? ': ' + log.error : ''}\n`);
  const kafka = new Kafka({
    clientId: 'kdelay-example-node',
    brokers: brokers.split(',').map((b) => b.trim()).filter(Boolean),
    logLevel: logLevel.ERROR,
    logCreator: toStderr,
  });
  return kafka.producer({
    idempotent: true, // implies acks=all and retries that cannot duplicate
    maxInFlightRequests: 1,
    createPartitioner: Partitioners.DefaultPartitioner,
  });
}

/** Epoch milliseconds or RFC 3339 ('2026-12-01T08:00:00Z') -> BigInt. */
function parseAt(text) {
  if (/^\d+$/.test(text)) return BigInt(text);
  const m = /^(\d{4})-(\d\d)-(\d\d)(?:[T ](\d\d):(\d\d)(?::(\d\d)(?:\.(\d{1,9}))?)?)?(Z|[+-]\d\d:\d\d)?$/i.exec(text);
  if (!m) throw new RangeError(`--at '${text}': not epoch ms or RFC 3339`);
  if (!m[8]) throw new RangeError(`--at '${text}': give a time zone (Z or +HH:MM)`);
  if (m[4] === undefined) throw new RangeError(`--at '${text}': give a time of day`);
  const [y, mo, d, h, mi, s] = m.slice(1, 7).map((x) => Number(x || 0));
  const ms = Date.UTC(y, mo - 1, d, h, mi, s);
  const back = new Date(ms);
  if (y < 1 || back.getUTCFullYear() !== y || back.getUTCMonth() !== mo - 1 || back.getUTCDate() !== d ||
      h > 23 || mi > 59 || s > 59)
    throw new RangeError(`--at '${text}': no such date or time`);
  let off = 0;
  if (m[8].toUpperCase() !== 'Z') {
    const sign = m[8][0] === '-' ? -1 : 1;
    off = sign * (Number(m[8].slice(1, 3)) * 60 + Number(m[8].slice(4, 6))) * 60000;
  }
  return BigInt(ms - off) + BigInt((m[7] || '').padEnd(3, '0').slice(0, 3) || '0');
}

const USAGE = `usage: ${PROG} [-h] [--brokers BROKERS] [--prefix PREFIX] [--tiers TIERS] --topic TOPIC
                   [--key KEY] [--value VALUE] (--at AT | --delay DELAY) [--id ID]
                   [--header NAME=VALUE]`;
const HELP = `${USAGE}

Schedule a kdelay task (wire format v1); prints its id.

options:
  -h, --help           show this help message and exit
  --brokers BROKERS    (default: $KDELAY_BROKERS, else 127.0.0.1:19092)
  --prefix PREFIX      topic prefix (kdelay)
  --tiers TIERS        the forwarders' tier ladder
  --topic TOPIC        target topic
  --key KEY            record key (none: null)
  --value VALUE        record value (none: null)
  --at AT              due time: epoch ms or RFC 3339
  --delay DELAY        due after: 250ms, 30s, 5m, 1h30m
  --id ID              task id (default: a new ULID)
  --header NAME=VALUE  a user header (repeatable)`;

/** Like argparse: exit 2 with the usage on stderr. */
function usageError(msg) {
  process.stderr.write(`${USAGE}\n${PROG}: error: ${msg}\n`);
  process.exit(2);
}

/** --name VALUE or --name=VALUE; a unique prefix of a name works too. */
function parseArgs(argv) {
  const names = ['brokers', 'prefix', 'tiers', 'topic', 'key', 'value', 'at', 'delay', 'id', 'header', 'help'];
  const a = { header: [] };
  for (let i = 0; i < argv.length; i++) {
    const arg = argv[i];
    if (arg === '-h') { process.stdout.write(HELP + '\n'); process.exit(0); }
    if (!arg.startsWith('--') || arg === '--') usageError(`unrecognized arguments: ${argv.slice(i).join(' ')}`);
    const eq = arg.indexOf('=');
    const given = eq < 0 ? arg.slice(2) : arg.slice(2, eq);
    const hits = names.includes(given) ? [given] : names.filter((n) => n.startsWith(given));
    if (hits.length !== 1)
      usageError(hits.length ? `ambiguous option: --${given} could match ${hits.map((n) => '--' + n).join(', ')}`
        : `unrecognized arguments: ${arg}`);
    const name = hits[0];
    if (name === 'help') { process.stdout.write(HELP + '\n'); process.exit(0); }
    let val = eq < 0 ? argv[++i] : arg.slice(eq + 1);
    // as argparse: a following word that looks like an option is not a value
    if (val === undefined || (eq < 0 && /^-[^\d]/.test(val)))
      usageError(`argument --${name}: expected one argument`);
    if (name === 'header') a.header.push(val);
    else a[name] = val;
  }
  if (a.at !== undefined && a.delay !== undefined) usageError('argument --delay: not allowed with argument --at');
  const missing = [a.topic === undefined && '--topic', a.at === undefined && a.delay === undefined && '--at/--delay'];
  if (missing.some(Boolean)) usageError(`the following arguments are required: ${missing.filter(Boolean).join(', ')}`);
  return a;
}

async function main(argv) {
  const a = parseArgs(argv);
  let tiers, fireAt;
  const headers = [];
  try {
    tiers = parseTiers(a.tiers ?? DEFAULT_TIERS);
    fireAt = a.at !== undefined ? parseAt(a.at) : nowMs() + parseDuration(a.delay);
    for (const h of a.header) {
      const eq = h.indexOf('=');
      if (eq <= 0) throw new RangeError(`--header '${h}': want NAME=VALUE`);
      headers.push([h.slice(0, eq), Buffer.from(h.slice(eq + 1), 'utf8')]);
    }
    checkTask(a.prefix ?? DEFAULT_PREFIX, a.topic, fireAt, a.id, headers);
  } catch (e) {
    if (e instanceof RangeError) usageError(e.message);
    throw e;
  }

  let producer;
  try {
    producer = makeProducer(a.brokers ?? process.env.KDELAY_BROKERS ?? '127.0.0.1:19092');
  } catch (e) {
    process.stderr.write(`${PROG}: ${e.code === 'MODULE_NOT_FOUND' ? 'the kafkajs module is missing (npm ci, or run.sh)' : e.message}\n`);
    return 1;
  }
  // An idempotent producer retries without end: give up after 35 s, as
  // schedule.py's flush(35) does.
  let timer;
  const deadline = new Promise((_, reject) => {
    timer = setTimeout(() => reject(new Error('not delivered within 35 s')), 35000);
  });
  const taskId = a.id ?? newUlid();
  const produce = (async () => {
    await producer.connect();
    return schedule(producer, a.prefix ?? DEFAULT_PREFIX, tiers, a.topic, a.key, a.value, fireAt,
      { taskId, headers });
  })();
  try {
    await Promise.race([produce, deadline]);
    process.stdout.write(taskId + '\n');
    return 0;
  } catch (e) {
    if (e instanceof RangeError) usageError(e.message);
    process.stderr.write(`${PROG}: task ${taskId} not scheduled: ${e.message}\n`);
    return 1;
  } finally {
    clearTimeout(timer);
    produce.catch(() => {}); // lost the race: its error no longer matters
    await Promise.race([producer.disconnect().catch(() => {}), new Promise((r) => setTimeout(r, 5000))]);
  }
}

module.exports = { schedule, makeProducer, parseTiers, parseDuration, formatDuration, chooseTier, newUlid, checkTask };

if (require.main === module) {
  main(process.argv.slice(2)).then((rc) => process.exit(rc), (e) => {
    process.stderr.write(`${PROG}: ${e.stack || e}\n`);
    process.exit(1);
  });
}
