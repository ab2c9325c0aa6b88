/**
 * The cluster's wire pieces, in process: the envelope codec (every refusal named), the batch
 * id scan, the block header's consensus field, the endpoint and settings checks, what the
 * follower logs while etcd is away, and the shared read of the log's tip.
 */
import t from 'tap';
import {
  batchIdOf,
  decodeCut,
  decodeEnvelope,
  decodeRemoval,
  delimitedFields,
  encodeCut,
  encodeEnvelope,
  encodeRemoval,
  EnvelopeError,
  isCut,
  isRemoval,
} from '../src/cluster/envelope.js';
import { LogConsensus, consensusRevision } from '../src/cluster/consensus.js';
import { parseEndpoints } from '../src/config/endpoints.js';
import { Outage } from '../src/cluster/outage.js';
import { FreshRead } from '../src/cluster/fresh-read.js';
import { ClusterLink } from '../src/cluster/link.js';
import type { Etcd3 } from 'etcd3';
import { log } from '../src/log.js';
import { logMessage } from './helpers/child.js';
import { loadConfig } from '../src/config.js';
import { intkeyBatch, newSigner } from './helpers/batches.js';

const member = newSigner();
const user = newSigner();
const b1 = intkeyBatch(user, [['set', 'a', 1]]);
const b2 = intkeyBatch(user, [['set', 'b', 2]]);
const known = (k: string): boolean => k === member.publicKey;

t.test('an envelope decodes to what was encoded, signer and time included', async (t) => {
  const env = encodeEnvelope(member, 1_700_000_000_123, [b1.bytes, b2.bytes]);
  const d = decodeEnvelope(env, known);
  t.equal(d.signer, member.publicKey);
  t.equal(d.ts, 1_700_000_000_123);
  t.same(
    d.batches.map((b) => b.id),
    [b1.id, b2.id],
  );
  t.same(Buffer.from(d.batches[1]?.bytes ?? []), Buffer.from(b2.bytes));
  t.equal(decodeEnvelope(encodeEnvelope(member, 5, []), known).batches.length, 0, 'an empty envelope is well formed');
});

t.test('an envelope that closes a block names the block, under its signature; one without a mark closes none', async (t) => {
  const plain = decodeEnvelope(encodeEnvelope(member, 7, [b1.bytes]), known);
  t.equal(plain.closes, 0, 'a CEV1 envelope closes nothing');
  const env = encodeEnvelope(member, 1_700_000_000_123, [b1.bytes, b2.bytes], 4242);
  t.equal(env.subarray(0, 4).toString(), 'CEV2');
  t.equal(env.length, encodeEnvelope(member, 1_700_000_000_123, [b1.bytes, b2.bytes]).length + 8, 'eight bytes more: the revision');
  const d = decodeEnvelope(env, known);
  t.equal(d.closes, 4242);
  t.equal(d.ts, 1_700_000_000_123);
  t.same(
    d.batches.map((b) => b.id),
    [b1.id, b2.id],
  );
  t.equal(decodeEnvelope(encodeEnvelope(member, 5, [], 9), known).closes, 9, 'an empty envelope may close a block');
  const moved = Buffer.from(env);
  moved.writeBigUInt64BE(4243n, 45);
  t.throws(() => decodeEnvelope(moved, known), /bad signature/, 'the revision is signed: another one is refused');
  const none = Buffer.from(env);
  none.writeBigUInt64BE(0n, 45);
  t.throws(() => decodeEnvelope(none, known), /closes no block/, 'CEV2 naming revision 0 is refused');
  t.throws(() => decodeEnvelope(env.subarray(0, 60), known), /too short/, 'a CEV2 shorter than its header is refused');
  const relabelled = Buffer.from(encodeEnvelope(member, 1, [b1.bytes]));
  relabelled.write('CEV2', 0);
  t.throws(() => decodeEnvelope(relabelled, known), /runs past the end|bad signature/, 'a CEV1 relabelled CEV2 is refused');
});

t.test('every malformed or forged envelope is refused with its reason', async (t) => {
  const env = encodeEnvelope(member, 1, [b1.bytes]);
  const refuse = (bytes: Uint8Array, reason: RegExp, what: string): void => {
    t.throws(() => decodeEnvelope(bytes, known), { name: 'Error', message: reason }, what);
    try {
      decodeEnvelope(bytes, known);
    } catch (err) {
      t.ok(err instanceof EnvelopeError, `${what}: an EnvelopeError`);
    }
  };
  refuse(Buffer.alloc(0), /bad magic or too short/, 'empty');
  refuse(Buffer.from('XEV1'.padEnd(200, 'x')), /bad magic/, 'another magic');
  const longer = Buffer.from(env);
  longer.writeUInt32BE(2, 45);
  refuse(longer, /batch 1 runs past the end/, 'a count larger than the batches');
  const zero = Buffer.from(env);
  zero.writeUInt32BE(0, 49);
  refuse(zero, /batch 0 runs past the end/, 'a zero-length batch');
  const huge = Buffer.from(env);
  huge.writeUInt32BE(0xffffffff, 49);
  refuse(huge, /batch 0 runs past the end/, 'a length past the end');
  const fewer = Buffer.from(env);
  fewer.writeUInt32BE(0, 45);
  refuse(fewer, /bytes after the last batch/, 'a count smaller than the batches');
  const notBatch = encodeEnvelope(member, 1, [Buffer.from([0x12, 0x03, 0x61, 0x62, 0x63])]);
  refuse(notBatch, /batch 0 has no readable header signature/, 'a batch whose id is not 128 hex');
  refuse(encodeEnvelope(newSigner(), 1, [b1.bytes]), /not a member of this cluster/, 'an outsider');
  const flipped = Buffer.from(env);
  flipped.writeUInt8(flipped.readUInt8(60) ^ 1, 60);
  refuse(flipped, /bad signature|no readable/, 'a flipped byte');
  const sig = Buffer.from(env);
  sig.writeUInt8(sig.readUInt8(sig.length - 1) ^ 1, sig.length - 1);
  refuse(sig, /bad signature/, 'a flipped signature byte');
});

t.test('batch ids and fields are read without decoding, and malformed bytes give null', async (t) => {
  t.equal(batchIdOf(b1.bytes), b1.id);
  t.equal(batchIdOf(Buffer.from([0xff])), null, 'a truncated varint');
  t.equal(batchIdOf(Buffer.from([0x12, 0x7f])), null, 'a length past the end');
  t.equal(batchIdOf(Buffer.from([0x0f])), null, 'an unknown wire type');
  t.equal(batchIdOf(Buffer.from([0x08, 0x01, 0x19, 1, 2, 3, 4, 5, 6, 7, 8, 0x25, 1, 2, 3, 4])), null, 'varint and fixed fields, no id');
  t.same(
    delimitedFields(Buffer.from([0x0a, 0x01, 0x41, 0x12, 0x00]))?.map((f) => f.field),
    [1, 2],
  );
  t.equal(delimitedFields(Buffer.from([0x08, 0x80, 0x80, 0x80, 0x80, 0x80, 0x80])), null, 'a varint longer than 5 bytes');
  t.equal(delimitedFields(Buffer.from([0x19, 1, 2])), null, 'a fixed64 past the end');
});

t.test('the consensus field names the log revision and the batches; other fields name none', async (t) => {
  let rev = 41;
  const c = new LogConsensus(() => rev);
  const f = c.summarize(['aa', 'bb']);
  t.equal(consensusRevision(f), 41);
  rev = 2 ** 40;
  t.equal(consensusRevision(c.summarize([])), 2 ** 40);
  t.not(Buffer.from(c.summarize(['aa'])).toString('hex'), Buffer.from(c.summarize(['bb'])).toString('hex'), 'the batches are in it');
  t.equal(consensusRevision(Buffer.from('Genesis')), null);
  t.equal(consensusRevision(Buffer.concat([Buffer.from('Devmode'), Buffer.alloc(41)])), null);
  t.equal(c.finalize(), true);
  c.close();
});

t.test('etcd endpoints and cluster settings are checked', async (t) => {
  t.same(parseEndpoints(' http://a:1, https://b:2 ,'), ['http://a:1', 'https://b:2']);
  t.throws(() => parseEndpoints(''), /no etcd endpoint/);
  t.throws(() => parseEndpoints('a:1'), /http:\/\/ or https:\/\//);
  t.throws(() => parseEndpoints('not a url'), /is not a URL/);
  const env = { CAIRN_CLUSTER_ETCD: 'http://127.0.0.1:2379', CAIRN_CHAIN_KEY: '/k' };
  const cfg = loadConfig([], env);
  t.match(cfg.cluster, { etcd: ['http://127.0.0.1:2379'], chainKeyFile: '/k', verify: undefined });
  t.equal(loadConfig([], {}).cluster, null, 'a single node without it');
  t.equal(loadConfig(['--cluster-etcd', 'http://x:1', '--chain-key', 'k', '--verify', 'all'], {}).cluster?.verify, 'all');
  t.throws(() => loadConfig([], { CAIRN_CLUSTER_ETCD: 'http://x:1' }), /needs --chain-key/, 'no chain key');
  t.throws(() => loadConfig([], { ...env, CAIRN_CLUSTER_ETCD: 'x:1' }), /cluster etcd/);
  t.throws(() => loadConfig([], { ...env, CAIRN_VERIFY: 'some' }), /trust or all/);
  t.throws(() => loadConfig([], { ...env, CAIRN_CLUSTER_ADVERTISE: 'ftp://x' }), /http\(s\):\/\/host:port/);
  t.throws(() => loadConfig([], { ...env, CAIRN_CLUSTER_ETCD_CERT: '/c' }), /all three/);
  // The append spacing: unset takes the link's default; 0 to 1000 ms; anything else refused.
  t.equal(cfg.cluster?.appendSpacingMs, undefined);
  t.equal(loadConfig([], { ...env, CAIRN_CLUSTER_APPEND_SPACING_MS: '0' }).cluster?.appendSpacingMs, 0);
  t.equal(loadConfig(['--cluster-append-spacing-ms', '1000'], env).cluster?.appendSpacingMs, 1000, 'the flag');
  for (const bad of ['1001', '-1', '8.5', '8ms', '1e3'])
    t.throws(() => loadConfig([], { ...env, CAIRN_CLUSTER_APPEND_SPACING_MS: bad }), /cluster append spacing/, `refused: "${bad}"`);
});

t.test('a cut names the block it closes; a forged or damaged one is refused', async (t) => {
  const cut = encodeCut(member, 4242);
  t.ok(isCut(cut));
  t.notOk(isCut(encodeEnvelope(member, 1, [])));
  t.same(decodeCut(cut, known), { signer: member.publicKey, target: 4242 });
  t.throws(() => decodeCut(cut.subarray(0, 60), known), /not a cut/);
  t.throws(() => decodeCut(encodeCut(newSigner(), 1), known), /not a member/);
  const bad = Buffer.from(cut);
  bad.writeUInt8(bad.readUInt8(40) ^ 1, 40);
  t.throws(() => decodeCut(bad, known), /bad signature/);
});

t.test('a removal names the member taken out and counts only when the chain key signed it', async (t) => {
  const chain = newSigner();
  const out = encodeRemoval(chain, member.publicKey);
  t.ok(isRemoval(out));
  t.notOk(isRemoval(encodeCut(member, 1)));
  t.notOk(isCut(out));
  t.equal(decodeRemoval(out, chain.publicKey), member.publicKey);
  t.throws(() => decodeRemoval(out, member.publicKey), /not by the chain key/, 'another chain key');
  t.throws(() => decodeRemoval(encodeRemoval(member, member.publicKey), chain.publicKey), /not by the chain key/, 'signed by a member');
  t.throws(() => decodeRemoval(out.subarray(0, 100), chain.publicKey), /not a removal/);
  t.throws(() => decodeRemoval(Buffer.concat([out, Buffer.from([0])]), chain.publicKey), /not a removal/);
  const bad = Buffer.from(out);
  bad.writeUInt8(bad.readUInt8(50) ^ 1, 50);
  t.throws(() => decodeRemoval(bad, chain.publicKey), /bad signature/, 'a member key changed after signing');
  t.throws(() => encodeRemoval(chain, 'not-a-key'), /not a public key/);
});

t.test('an outage is said when it starts, every 30 s while it lasts, and when it ends', (t) => {
  const lines: string[] = [];
  const write = process.stderr.write;
  process.stderr.write = ((c: string | Uint8Array) => {
    lines.push(logMessage(String(c).trim()));
    return true;
  }) as typeof process.stderr.write;
  t.teardown(() => {
    process.stderr.write = write;
  });
  log.setFormat('json');
  log.setLevel('info');
  let now = 1_000_000;
  const o = new Outage('cluster log unreadable', () => now);
  o.ok();
  t.same(lines, [], 'a success with no outage says nothing');
  // Two minutes of tries every 0.8 s, as the follower retries while etcd has no quorum.
  for (let i = 0; i < 150; i++) {
    o.fail(`no quorum ${i}`);
    now += 800;
  }
  t.same(
    lines,
    [
      'cluster log unreadable (no quorum 0); retrying',
      'cluster log unreadable for 30.4 s, 39 tries (the last: no quorum 38); retrying',
      'cluster log unreadable for 60.8 s, 77 tries (the last: no quorum 76); retrying',
      'cluster log unreadable for 91.2 s, 115 tries (the last: no quorum 114); retrying',
    ],
    '150 failed tries over two minutes: four lines, not 150',
  );
  lines.length = 0;
  o.ok();
  t.same(lines, ['cluster log unreadable: over after 120.0 s, 150 failed tries'], 'its end is said once');
  o.ok();
  o.fail('refused');
  t.same(lines.slice(1), ['cluster log unreadable (refused); retrying'], 'the next outage is said from its start');
  t.end();
});

t.test('a shared read: one in flight, and a caller never gets a read that began before it', async (t) => {
  // Each read answers what the source holds when it starts; the test ends each one by hand.
  let value = 0;
  const started: number[] = [];
  const ends: Array<() => void> = [];
  const r = new FreshRead(
    () =>
      new Promise<number>((resolve) => {
        const seen = value;
        started.push(seen);
        ends.push(() => resolve(seen));
      }),
  );
  const tick = (): Promise<void> => new Promise((d) => setImmediate(d));
  const a = r.get();
  value = 1; // written after the first read started: callers from now on must see it
  const [b, c] = [r.get(), r.get()];
  t.same(started, [0], 'one read in flight, however many ask');
  ends.shift()?.();
  t.equal(await a, 0, 'the first caller gets the read it started');
  await tick();
  t.same(started, [0, 1], 'the callers that came meanwhile share the next read, started when the first ended');
  ends.shift()?.();
  t.same(await Promise.all([b, c]), [1, 1], 'and get what it read, not the older answer');
  // Idle again: a new caller starts a read of its own.
  value = 2;
  const d = r.get();
  t.same(started, [0, 1, 2]);
  ends.shift()?.();
  t.equal(await d, 2);
});

t.test("a status wait asks again for the log's tip while etcd fails, until its time is up", async (t) => {
  // A client whose reads of the log fail `failures` times, then find the log empty.
  const linkWith = (failures: number): { link: ClusterLink; calls: () => number } => {
    let calls = 0;
    const query = {
      prefix: () => query,
      minModRevision: () => query,
      sort: () => query,
      limit: () => query,
      exec: async () => {
        calls++;
        if (calls <= failures) throw new Error('14 UNAVAILABLE: the members are paused');
        return { kvs: [] };
      },
    };
    const client = { getAll: () => query } as unknown as Etcd3;
    const link = new ClusterLink({
      client,
      signer: member,
      nextRev: 1,
      tell: () => undefined,
      refusal: () => null,
      verify: null,
      chainKey: member.publicKey,
      peers: () => [],
      head: () => ({ blockNum: -1, blockId: '', stateRoot: '' }) as never,
      diverged: () => undefined,
      appendSpacingMs: 8,
    });
    return { link, calls: () => calls };
  };
  // etcd back after two failed reads: the wait ends once a read answers, well within its time.
  const back = linkWith(2);
  let t0 = performance.now();
  await back.link.readThrough(3_000);
  const backMs = performance.now() - t0;
  t.equal(back.calls(), 3, 'two failed reads asked again; the third answers');
  t.ok(backMs < 2_000, `ended once etcd answered (${Math.round(backMs)} ms of a 3-s wait)`);
  await back.link.close();
  // etcd away for good: the wait keeps asking and ends when its own time is up.
  const away = linkWith(Number.POSITIVE_INFINITY);
  t0 = performance.now();
  await away.link.readThrough(700);
  const awayMs = performance.now() - t0;
  t.ok(awayMs >= 650 && awayMs < 1_500, `ended with its time (${Math.round(awayMs)} ms of a 0.7-s wait)`);
  t.ok(away.calls() >= 3, `asked ${away.calls()} times`);
  await away.link.close();
});
