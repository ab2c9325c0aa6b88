/**
 * Fuzzing a cluster's log in etcd: three member processes on one etcd member, and this
 * process writing straight into etcd under the cluster's prefix, in rounds of bounded time
 * and count, while genuine batches are submitted to the members:
 *  - garbage: random bytes, and random bytes behind each entry kind's magic (CEV1, CEV2,
 *    CUT1, RMV1);
 *  - mutations of genuine entries read back from the log (bytes flipped, cut, inserted,
 *    doubled, a huge length spliced in): wrong signatures, broken layouts;
 *  - forgeries: well-formed envelopes and cuts signed by a key that never registered (with
 *    batches of their own, which must never commit), removals signed by a member's key instead
 *    of the chain key;
 *  - out-of-order and repeated entries signed by a member's own key: cuts of blocks long
 *    closed, not open yet or far in the future, envelopes that close such blocks, empty
 *    envelopes, envelopes of batches already committed (replays of genuine entries, copied
 *    whole under new keys), the same batch several times in one envelope, times of 0 and far
 *    in the future;
 *  - several entries in one etcd transaction (one revision: the first is taken, the rest passed
 *    over), genuine keys written again with garbage or deleted;
 *  - garbage records beside the log (cairn/live/, cairn/attest/, cairn/nodes/, cairn/removed/
 *    under keys that are no member's: values that are not JSON, JSON of the wrong shape, well
 *    formed records of members that do not exist). A record at cairn/removed/<a member's key>
 *    is left out: whatever its value, that member's appends stop (their etcd condition is that
 *    no such record exists), a limit of etcd's comparisons noted in docs/http-hardening.md.
 * After each round: every member answers GET /status, the genuine batches submitted during the
 * round and one more through each member commit on all of them, the members agree on the head
 * (block id and state root), no forged batch is known anywhere, and the members' logs show no
 * stack trace, unhandled error or alarm. After the last round: the members still list each
 * other as live, and the log's retention still moves its floor.
 *
 * Seed, time and replay: test/helpers/fuzz.ts (FUZZ_SEED=<seed printed in the comments>).
 */
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import t, { type Test } from 'tap';
import { Etcd3 } from 'etcd3';
import protobuf from 'protobufjs';
import { encodeCut, encodeEnvelope, encodeRemoval } from '../src/cluster/envelope.js';
import { Signer } from '../src/crypto/secp256k1.js';
import { Batch, decode, encode } from '../src/proto/index.js';
import { batchList, getJson, intkeyBatch, newSigner, postBatches, waitCommitted } from './helpers/batches.js';
import { sameHeadOf, startCluster, type TestCluster } from './helpers/cluster.js';
import { FUZZ_MS, Rng, SEED, forAWhile, until, within } from './helpers/fuzz.js';

const ROUNDS = 4;
/** etcd writes one round makes at most (the time bound usually comes first). */
const ROUND_MAX = 800;
const LOG = 'cairn/log/';

let c: TestCluster;
let client: Etcd3;
let urls: string[] = [];
/** The members' node keys (they sign the members' envelopes and cuts). */
let members: Signer[] = [];
const outsider = newSigner();
const user = newSigner();
let seq = 0;
const genuine = (): ReturnType<typeof intkeyBatch> => intkeyBatch(user, [['set', `g${seq++}`, seq]]);
/** Batches only ever put in forged or broken entries: never to be known by any member. */
const forged: string[] = [];
/** Broken batches in entries a member's key signed: never committed, and settled alike on every member. */
const broken: string[] = [];
/** Genuine batches this fuzzer put in member-signed envelopes of its own: they commit, once. */
const memberBatches: string[] = [];
/** … and how each was written (for a failure's message). */
const memberMade = new Map<string, string>();
/** Genuine log entries read back from etcd (key, value), and the newest revision seen. */
let entries: Array<{ key: string; value: Buffer }> = [];
let lastRev = 0;
const counts: Record<string, number> = Object.create(null) as Record<string, number>;
const count = (what: string): void => {
  counts[what] = (counts[what] ?? 0) + 1;
};

t.before(async () => {
  c = await startCluster(3, { etcdMembers: 1 });
  client = new Etcd3({ hosts: c.etcd.endpoints });
  urls = c.nodes.map((n) => n?.ledgerUrl ?? '');
  members = [0, 1, 2].map((i) => new Signer(readFileSync(join(c.dir, `n${i}`, 'keys', 'validator.priv'), 'utf8').trim()));
  // Some genuine entries to mutate and replay.
  const ids: string[] = [];
  for (const url of urls) {
    const b = [genuine(), genuine()];
    const r = await postBatches(url, batchList(...b));
    if (r.status !== 202) throw new Error(`setup submit: ${r.status}`);
    ids.push(...b.map((x) => x.id));
  }
  for (const url of urls)
    if (!(await waitCommitted(url, ids, 30)).every((s) => s.status === 'COMMITTED')) throw new Error('setup batches not committed');
  await readEntries();
  t.comment(`fuzz seed ${SEED} (FUZZ_SEED=${SEED} to repeat)`);
});

t.teardown(async () => {
  client?.close();
  await c?.stop();
});

/** The log's genuine entries now (its newest 200), for the fuzzer to mutate and replay. */
async function readEntries(): Promise<void> {
  const res = await client.getAll().prefix(LOG).sort('Mod', 'Descend').limit(200).exec();
  lastRev = Number(res.header.revision);
  entries = res.kvs.filter((kv) => !kv.key.toString().includes('/fuzz-')).map((kv) => ({ key: kv.key.toString(), value: Buffer.from(kv.value) }));
}

// ---- what the fuzzer writes ----

/** A revision to name in a cut or a closing envelope: past, near, now, ahead, absurd. */
function revision(r: Rng): number {
  return r.pick([1, 2, Math.max(1, lastRev - r.int(20)), lastRev, lastRev + 1, lastRev + 1 + r.int(50), 2 ** 32, 2 ** 53 - 1]);
}

function time(r: Rng): number {
  return r.pick([Date.now(), Date.now(), 0, 1, Date.now() + 365 * 86_400_000, 8.64e15, 2 ** 53 - 1]);
}

/** A batch no genuine submit carries: signed by a stranger, recorded as one that must never commit. */
function strayBatch(r: Rng): ReturnType<typeof intkeyBatch> {
  const b = intkeyBatch(newSigner(), [['set', `stray${r.int(1000)}`, r.int(100)]]);
  forged.push(b.id);
  return b;
}

/**
 * A batch whose id reads (field 2, 128 hex) and whose insides are broken: a header that is not
 * one, no transactions, transactions that are random bytes or a genuine one mutated.
 */
function brokenBatch(r: Rng): { id: string; bytes: Uint8Array } {
  const id = r.hex(128);
  const w = protobuf.Writer.create();
  w.uint32(10).bytes(r.bytes(r.int(80)));
  w.uint32(18).string(id);
  for (let i = 0, k = r.int(3); i < k; i++) w.uint32(26).bytes(r.chance(0.5) ? r.mutate(genuine().bytes) : r.bytes(r.int(120)));
  return { id, bytes: w.finish() };
}

function someEntry(r: Rng): Buffer {
  return entries.length > 0 ? r.pick(entries).value : encodeEnvelope(r.pick(members), Date.now(), []);
}

const fuzzKey = (r: Rng, signer?: Signer): string => `${LOG}${signer?.publicKey ?? r.hex(66)}/fuzz-${r.hex(8)}`;

async function put(key: string, value: Uint8Array): Promise<void> {
  const res = await client.put(key).value(Buffer.from(value)).exec();
  lastRev = Math.max(lastRev, Number(res.header.revision));
}

/** One etcd write of the fuzzer. */
async function fuzzOne(r: Rng): Promise<void> {
  const roll = r.int(100);
  const member = r.pick(members);
  if (roll < 12) {
    count('garbage');
    const magic = r.pick(['', 'CEV1', 'CEV2', 'CUT1', 'RMV1', 'CEV', 'X']);
    return put(fuzzKey(r), Buffer.concat([Buffer.from(magic), r.bytes(r.pick([0, 1, 33, 45, 57, 65, 109, 134, 170, 500, 4096]))]));
  }
  if (roll < 32) {
    count('mutated genuine entries');
    return put(fuzzKey(r, member), r.mutate(someEntry(r)));
  }
  if (roll < 42) {
    count('forged by an outsider');
    const kind = r.int(3);
    if (kind === 0) return put(fuzzKey(r, outsider), encodeEnvelope(outsider, time(r), [strayBatch(r).bytes], r.chance(0.3) ? revision(r) : 0));
    if (kind === 1) return put(fuzzKey(r, outsider), encodeCut(outsider, revision(r)));
    // A removal of a member, signed by another member's key (not the chain key).
    return put(`${LOG}${member.publicKey}/fuzz-remove-${r.hex(4)}`, encodeRemoval(member, r.pick(members).publicKey));
  }
  if (roll < 47) {
    count('member-signed, then changed');
    // A member's envelope of a stray batch, a byte changed after signing.
    const env = encodeEnvelope(member, time(r), [strayBatch(r).bytes], r.chance(0.3) ? revision(r) : 0);
    const i = 4 + r.int(env.length - 4);
    env[i] = (env[i] ?? 0) ^ (1 + r.int(255));
    return put(fuzzKey(r, member), env);
  }
  if (roll < 50) {
    count('member-signed, a broken batch inside');
    // A batch whose id reads (so the envelope's layout is right) and whose insides do not:
    // a member's own key vouches for it (a member gone wrong).
    const b = brokenBatch(r);
    broken.push(b.id);
    return put(fuzzKey(r, member), encodeEnvelope(member, Date.now(), [b.bytes], r.chance(0.3) ? revision(r) : 0));
  }
  if (roll < 62) {
    count('member-signed, out of order');
    switch (r.int(4)) {
      case 0:
        return put(fuzzKey(r, member), encodeCut(member, revision(r)));
      case 1:
        return put(fuzzKey(r, member), encodeEnvelope(member, time(r), [], revision(r)));
      case 2: {
        // Batches already committed (or the same one several times), closing some block or none.
        const b = r.chance(0.5) ? genuine() : null;
        const again = b ? Array.from({ length: 1 + r.int(4) }, () => b.bytes) : [];
        const ts = time(r);
        const closes = r.chance(0.5) ? revision(r) : 0;
        if (b) {
          memberBatches.push(b.id);
          memberMade.set(b.id, `time ${ts}, ${again.length} copies, closing ${closes}`);
        }
        return put(fuzzKey(r, member), encodeEnvelope(member, ts, again, closes));
      }
      default:
        // A genuine entry copied whole under a new key (a replay).
        count('replays');
        return put(fuzzKey(r, member), someEntry(r));
    }
  }
  if (roll < 72) {
    count('several entries in one revision');
    const puts = Array.from({ length: 2 + r.int(4) }, () => {
      const value = r.chance(0.5) ? someEntry(r) : r.chance(0.5) ? r.mutate(someEntry(r)) : r.bytes(r.int(200));
      return { request_put: { key: Buffer.from(fuzzKey(r, member)), value: Buffer.from(value) } };
    });
    const res = await client.kv.txn({ success: puts });
    lastRev = Math.max(lastRev, Number(res.header.revision));
    return;
  }
  if (roll < 82) {
    count('genuine keys rewritten or deleted');
    const e = entries.length > 0 ? r.pick(entries) : null;
    if (!e) return;
    if (r.chance(0.5)) {
      await client.delete().key(e.key).exec();
      return;
    }
    return put(e.key, r.chance(0.5) ? r.mutate(e.value) : r.bytes(r.int(300)));
  }
  count('garbage records beside the log');
  const prefix = r.pick(['cairn/live/', 'cairn/attest/', 'cairn/nodes/', 'cairn/removed/', 'cairn/', 'cairn/log']);
  const key = `${prefix}fuzz-${r.hex(8)}`;
  const value = r.pick([
    () => r.bytes(r.int(100)),
    () => Buffer.from('{"nodeId":'),
    () => Buffer.from(JSON.stringify({ nodeId: r.string(), publicKey: r.hex(66), ledgerUrl: r.string(), applied: r.number(), height: r.number() })),
    () => Buffer.from(JSON.stringify({ height: r.number(), blockId: r.hex(128), stateRoot: r.hex(64) })),
    () => Buffer.from('null'),
    () => Buffer.from('[]'),
  ])();
  return put(key, value);
}

// ---- the genuine side ----

/** Submits genuine batches to the members in turn until `stop()`; resolves with the ids acknowledged. */
async function genuineLoad(stop: () => boolean): Promise<string[]> {
  const acked: string[] = [];
  for (let k = 0; !stop(); k++) {
    const b = genuine();
    const r = await postBatches(urls[k % urls.length] ?? '', batchList(b)).catch(() => ({ status: 0 }));
    if (r.status === 202) acked.push(b.id);
    await new Promise((res) => setTimeout(res, 100));
  }
  return acked;
}

/** Log lines that must never appear: a stack trace, an unhandled error, an alarm, a divergence. */
const BAD_LOG = /\n\s+at |uncaught exception|unhandled promise rejection|alarm raised|chain diverged/;

async function checkRound(t: Test, round: number, acked: string[]): Promise<void> {
  const tag = `round ${round} (seed ${SEED})`;
  for (const url of urls) {
    const s = await within(`${url}: GET /status`, fetch(`${url}/status`), 15_000);
    t.equal(s.status, 200, `${tag}: ${url} answers GET /status`);
    await s.text();
  }
  const more: string[] = [];
  for (const url of urls) {
    const b = genuine();
    t.equal((await postBatches(url, batchList(b))).status, 202, `${tag}: ${url} takes a batch`);
    more.push(b.id);
  }
  // The genuine batches of the members' envelopes this fuzzer wrote commit too (their envelopes are valid).
  const all = [...acked, ...more, ...memberBatches.splice(0)];
  for (const url of urls) {
    const st = await waitCommitted(url, all, 30);
    const notCommitted = st
      .filter((s: { status: string }) => s.status !== 'COMMITTED')
      .map(
        (s: { id: string; status: string }) =>
          `${s.id.slice(0, 8)} ${s.status}${memberMade.has(s.id) ? ` (in a member-signed envelope of the fuzzer: ${memberMade.get(s.id)})` : ''}`,
      );
    t.same(notCommitted, [], `${tag}: ${all.length} genuine batches committed on ${url}`);
  }
  const h = await sameHeadOf(c, 0, 30);
  t.ok(h.num > 0, `${tag}: the members agree on the head (block ${h.num})`);
  for (let i = 0; i < forged.length; i += 40) {
    const ids = forged.slice(i, i + 40);
    for (const url of urls) {
      const st = (await getJson(`${url}/batch_statuses?id=${ids.join(',')}`)).json.data as Array<{ status: string }>;
      if (st.some((s) => s.status !== 'UNKNOWN'))
        t.fail(`${tag}: a forged batch is known on ${url}: ${JSON.stringify(st.filter((s) => s.status !== 'UNKNOWN'))}`);
    }
  }
  t.pass(`${tag}: none of ${forged.length} forged batches is known anywhere`);
  for (let i = 0; i < broken.length; i += 40) {
    const ids = broken.slice(i, i + 40);
    const seen = await Promise.all(
      urls.map(async (url) =>
        ((await getJson(`${url}/batch_statuses?id=${ids.join(',')}`)).json.data as Array<{ status: string }>).map((s) => s.status),
      ),
    );
    // A member's envelope is trusted (the chain's default trust mode): a "broken" batch that
    // still decodes into a consistent batch (an empty header and no transactions, say) may
    // commit. What must hold is that every member settles each one alike.
    if (seen.some((st) => JSON.stringify(st) !== JSON.stringify(seen[0])))
      t.fail(`${tag}: broken batches settled differently: ${JSON.stringify(seen)}`);
  }
  t.pass(`${tag}: each of ${broken.length} broken batches in member-signed entries settled alike everywhere`);
  for (const [i, n] of c.nodes.entries())
    t.notMatch(n?.log() ?? '', BAD_LOG, `${tag}: member ${i}'s log has no stack trace, unhandled error, alarm or divergence`);
}

let floorBefore = 0;

/** The log's retention floor now (0: none yet). */
const floorNow = async (): Promise<number> => Number((await client.get('cairn/floor').string()) ?? '0');

t.test('found by seed 1701123226: records beside the log that are not records stop neither the retention nor the members', async (t) => {
  // A registration that is not JSON made every round of every member's records throw: the
  // log's retention (and the attestations' checks) stopped for good, silently. Attestations
  // under keys that are no member's, skipped with it, must not count either: three that
  // disagree with the members would outvote them (DIVERGED on every member).
  const before = await floorNow();
  await client.put('cairn/nodes/fuzz-not-json').value('{"nodeId":').exec();
  await client
    .put('cairn/nodes/fuzz-wrong-types')
    .value(JSON.stringify({ nodeId: 5, ledgerUrl: [] }))
    .exec();
  await client.put('cairn/attest/fuzz-not-json').value('[').exec();
  for (let i = 0; i < 3; i++)
    await client
      .put(`cairn/attest/${newSigner().publicKey}`)
      .value(JSON.stringify({ height: 1, blockId: 'f'.repeat(128), stateRoot: '0'.repeat(64) }))
      .exec();
  const b = genuine();
  t.equal((await postBatches(urls[0] ?? '', batchList(b))).status, 202);
  for (const url of urls) t.equal((await waitCommitted(url, [b.id], 30))[0]?.status, 'COMMITTED', `committed on ${url}`);
  let floor = before;
  await until(
    'the floor to move',
    async () => {
      floor = await floorNow();
      return floor > before;
    },
    30_000,
  ).catch(() => undefined);
  t.ok(floor > before, `the retention moved the log's floor (${before} → ${floor})`);
  for (const url of urls) {
    const more = genuine();
    t.equal((await postBatches(url, batchList(more))).status, 202, `${url} still acknowledges batches`);
  }
  for (const [i, n] of c.nodes.entries()) {
    t.notMatch(n?.log() ?? '', BAD_LOG, `member ${i}: no alarm`);
    t.match(n?.log() ?? '', /cluster record cairn\/nodes\/fuzz-not-json is not a record of its kind: skipped/, `member ${i} says what it skipped`);
  }
});

t.test(
  "found by seed 441828556: batches a member's key vouches for that do not decode, or whose header does not list their transactions, are INVALID on every member, not the end of their committers",
  async (t) => {
    // In the chain's trust mode the members do not verify a member's batches again: one that
    // did not decode stopped every member's committer at its log entry (BUILD_FAILED), and
    // again at every restart.
    const member = members[0] as Signer;
    // A header that is not a BatchHeader (wire type 7 does not exist), one transaction of random bytes.
    const noHeader = {
      id: 'ab'.repeat(64),
      bytes: protobuf.Writer.create()
        .uint32(10)
        .bytes(Buffer.from([0xff, 0xff]))
        .uint32(18)
        .string('ab'.repeat(64))
        .uint32(26)
        .bytes(Buffer.from('not a transaction'))
        .finish(),
    };
    // A genuine transaction under the header of another batch (its ids are not the transaction's).
    const one = decode(Batch, genuine().bytes);
    const mismatchId = 'cd'.repeat(64);
    const mismatch = encode(Batch, { header: decode(Batch, genuine().bytes).header, headerSignature: mismatchId, transactions: one.transactions });
    const good = genuine();
    const envelope = encodeEnvelope(member, Date.now(), [noHeader.bytes, mismatch, good.bytes]);
    await client.put(`${LOG}${member.publicKey}/fuzz-regression-broken`).value(envelope).exec();
    for (const url of urls)
      t.equal((await waitCommitted(url, [good.id], 30))[0]?.status, 'COMMITTED', `the genuine batch beside them commits on ${url}`);
    for (const url of urls) {
      const st = (await getJson(`${url}/batch_statuses?id=${noHeader.id},${mismatchId}`)).json.data as Array<{ status: string }>;
      t.same(
        st.map((s) => s.status),
        ['INVALID', 'INVALID'],
        `both broken batches INVALID on ${url}`,
      );
    }
    await sameHeadOf(c, 0, 30);
    for (const [i, n] of c.nodes.entries()) t.notMatch(n?.log() ?? '', BAD_LOG, `member ${i}: no alarm`);
  },
);

for (let round = 0; round < ROUNDS; round++) {
  t.test(`round ${round}`, async (t) => {
    const r = Rng.round(SEED, round);
    if (round === 0) floorBefore = await floorNow();
    await readEntries();
    let done = false;
    const load = genuineLoad(() => done);
    const t0 = Date.now();
    const sent = await forAWhile(FUZZ_MS / ROUNDS, ROUND_MAX, () => fuzzOne(r));
    done = true;
    const acked = await load;
    const t1 = Date.now();
    await checkRound(t, round, acked);
    t.comment(`round ${round}: ${sent} etcd writes in ${t1 - t0} ms, ${acked.length} genuine batches meanwhile; checks ${Date.now() - t1} ms`);
  });
}

t.test('after the fuzzing: the members list each other, and the retention goes on', async (t) => {
  t.comment(`seed ${SEED}: ${JSON.stringify(counts)}`);
  for (const url of urls) {
    await until(
      `${url} lists three live members`,
      async () => ((await getJson(`${url}/status`)).json.data.cluster?.members ?? []).filter((m: { live: boolean }) => m.live).length === 3,
      15_000,
    ).catch(() => undefined);
    const members = (await getJson(`${url}/status`)).json.data.cluster?.members ?? [];
    t.equal(members.filter((m: { live: boolean }) => m.live).length, 3, `${url} lists three live members`);
  }
  // The retention (every 5 s, by one member) deletes the log up to what every member applied.
  let floor = floorBefore;
  await until(
    'the log floor to move',
    async () => {
      floor = await floorNow();
      return floor > floorBefore;
    },
    30_000,
  ).catch(() => undefined);
  t.ok(floor > floorBefore, `the log's floor moved (${floorBefore} → ${floor})`);
});

t.test('no batch is in two blocks', async (t) => {
  for (const url of urls) {
    const seen = new Set<string>();
    const twice: string[] = [];
    for (const b of (await getJson(`${url}/blocks?limit=1000`)).json.data as Array<{ header: { batch_ids: string[] } }>) {
      for (const id of b.header.batch_ids) {
        if (seen.has(id)) twice.push(id);
        else seen.add(id);
      }
    }
    t.same(twice, [], `${url}: ${seen.size} batches, none twice`);
  }
});
