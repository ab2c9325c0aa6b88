/**
 * Faults of a Cairn cluster, with real processes: kill -9 of a node under load, kill -9 of
 * the etcd leader, etcd without quorum, a member that comes back after the log it missed
 * was deleted, and a member whose state diverges (a test hook).
 */
import t from 'tap';
import { randomBytes } from 'node:crypto';
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { Etcd3 } from 'etcd3';
import { encodeEnvelope } from '../src/cluster/envelope.js';
import { Signer } from '../src/crypto/secp256k1.js';
import { batchList, getJson, intkeyBatch, newSigner, postBatches } from './helpers/batches.js';
import { head, sameHeadOf, startCluster, stopOrKill, type TestCluster } from './helpers/cluster.js';

const signer = newSigner();
let seq = 0;
const batch = (): ReturnType<typeof intkeyBatch> => intkeyBatch(signer, [['set', `f${seq++}`, seq]]);
const sleep = (ms: number): Promise<void> => new Promise((r) => setTimeout(r, ms));

/** Posts lists of `size` batches to the urls in turn until `stop()`; resolves with the ids acknowledged (202). */
async function load(
  urls: () => string[],
  stop: () => boolean,
  size = 4,
  progress = { acked: 0 },
): Promise<{ acked: string[]; refused: number; errors: number }> {
  const acked: string[] = [];
  let refused = 0;
  let errors = 0;
  for (let k = 0; !stop(); k++) {
    const list = urls();
    const url = list[k % list.length] ?? '';
    const b = Array.from({ length: size }, batch);
    try {
      const r = await postBatches(url, batchList(...b));
      if (r.status === 202) {
        acked.push(...b.map((x) => x.id));
        progress.acked += size;
      } else refused++;
    } catch {
      errors++;
      await sleep(20);
    }
  }
  return { acked, refused, errors };
}

async function allCommitted(url: string, ids: string[], seconds = 30): Promise<string[]> {
  const missing: string[] = [];
  for (let i = 0; i < ids.length; i += 500) {
    const part = ids.slice(i, i + 500);
    const r = await fetch(`${url}/batch_statuses?wait=${seconds}`, {
      method: 'POST',
      headers: { 'content-type': 'application/json' },
      body: JSON.stringify(part),
    });
    const body = (await r.json()) as { data?: Array<{ id: string; status: string }> };
    if (!body.data) throw new Error(`batch_statuses on ${url}: HTTP ${r.status} ${JSON.stringify(body)}`);
    for (const x of body.data) if (x.status !== 'COMMITTED') missing.push(`${x.id.slice(0, 12)}:${x.status}`);
  }
  return missing;
}

const urlsOf = (c: TestCluster, which = [0, 1, 2]): string[] => which.map((i) => c.nodes[i]?.ledgerUrl ?? '');

t.test('cluster faults', async (t) => {
  // etcd is defragmented every few seconds here (every hour by default), and the members
  // read the log at most 2 blocks and 32 entries ahead of their committer (256 and 4096).
  const c = await startCluster(3, { nodeEnv: { CAIRN_TEST_CLUSTER_DEFRAG_MS: '4000', CAIRN_TEST_CLUSTER_READ_AHEAD: '2' } });
  t.teardown(() => c.stop());

  await t.test('kill -9 of a node under load loses no acknowledged batch', async (t) => {
    let stop = false;
    let victimUp = true;
    const urls = (): string[] => (victimUp ? urlsOf(c) : urlsOf(c, [0, 1]));
    const progress = { acked: 0 };
    const runs = [load(urls, () => stop, 4, progress), load(urls, () => stop, 4, progress), load(urls, () => stop, 4, progress)];
    // Under load: the kill comes once batches flow (a slow machine takes longer to start them).
    for (const until = Date.now() + 30_000; progress.acked < 60 && Date.now() < until; ) await sleep(100);
    await c.nodes[2]?.kill9();
    victimUp = false;
    // The load goes on against the two others for a while: until they have acknowledged
    // twenty batches more (bounded, for a machine where they cannot).
    const atKill = progress.acked;
    for (const until = Date.now() + 10_000; progress.acked < atKill + 20 && Date.now() < until; ) await sleep(50);
    stop = true;
    const results = await Promise.all(runs);
    const acked = results.flatMap((r) => r.acked);
    t.ok(acked.length > 20, `${acked.length} batches acknowledged (${results.map((r) => `${r.refused} refused, ${r.errors} errors`).join('; ')})`);
    for (const url of urlsOf(c, [0, 1])) t.same(await allCommitted(url, acked), [], `every acknowledged batch committed on ${url}`);
    await c.start(2);
    const h = await sameHeadOf(c);
    t.ok(h.num > 0, `the restarted node caught up to block ${h.num}`);
    t.same(await allCommitted(urlsOf(c, [2])[0] ?? '', acked), [], 'and holds every acknowledged batch');
  });

  await t.test('kill -9 of the etcd leader pauses commits for the election only, and loses nothing', async (t) => {
    const url = urlsOf(c, [0])[0] ?? '';
    let stop = false;
    const heads: Array<{ at: number; num: number }> = [];
    const watch = (async () => {
      while (!stop) {
        const h = await head(url).catch(() => null);
        if (h && heads.at(-1)?.num !== h.num) heads.push({ at: Date.now(), num: h.num });
        await sleep(50);
      }
    })();
    const runs = [
      load(
        () => urlsOf(c, [0, 1]),
        () => stop,
        2,
      ),
      load(
        () => urlsOf(c, [1, 2]),
        () => stop,
        2,
      ),
    ];
    // Commits flow before the kill (two new heads seen), and the load goes on after it until
    // three blocks more have been committed (at most 9 s: a longer pause fails below).
    for (const until = Date.now() + 10_000; heads.length < 2 && Date.now() < until; ) await sleep(50);
    const leader = await c.etcd.leader();
    const killedAt = Date.now();
    await c.etcd.kill(leader);
    for (const until = killedAt + 9_000; heads.filter((h) => h.at > killedAt).length < 3 && Date.now() < until; ) await sleep(50);
    stop = true;
    const results = await Promise.all(runs);
    await watch;
    const acked = results.flatMap((r) => r.acked);
    const after = heads.filter((h) => h.at > killedAt);
    t.ok(after.length > 0, 'blocks were committed after the kill');
    // The longest time without a new block from just before the kill to the end of the load.
    let pause = 0;
    let prev = killedAt;
    for (const h of after) {
      pause = Math.max(pause, h.at - prev);
      prev = h.at;
    }
    t.ok(pause <= 10_000, `the longest pause in commits after the kill: ${pause} ms (the election and etcd's request timeout)`);
    for (const u of urlsOf(c)) t.same(await allCommitted(u, acked), [], `every acknowledged batch committed on ${u}`);
    await sameHeadOf(c);
    await c.etcd.restart(leader);
  });

  await t.test('etcd without quorum: 503, never a 202; back when a member returns', async (t) => {
    const url = urlsOf(c, [0])[0] ?? '';
    await c.etcd.kill(0);
    await c.etcd.kill(1);
    const answers: number[] = [];
    for (let k = 0; k < 3; k++) {
      const b = batch();
      const r = await postBatches(url, batchList(b));
      answers.push(r.status);
      if (r.status !== 202) t.match(r.json.error?.message ?? '', /etcd|log/, 'the 503 names the cluster log');
    }
    t.same(answers, [503, 503, 503], 'every submission refused with 503');
    // A status wait for a batch the member does not know first asks etcd for the log's tip,
    // which cannot answer now (each ask runs to its deadline, and later waits share the next
    // ask): the wait still answers when its own time is up, not when the asks end.
    const unknownWait = async (delayMs: number): Promise<{ status: string; ms: number }> => {
      await sleep(delayMs);
      const t0 = performance.now();
      const r = await getJson(`${url}/batch_statuses?id=${randomBytes(64).toString('hex')}&wait=1`);
      return { status: r.json.data?.[0]?.status, ms: performance.now() - t0 };
    };
    for (const w of await Promise.all([unknownWait(0), unknownWait(400), unknownWait(800)])) {
      t.equal(w.status, 'UNKNOWN', 'unknown, from the stores');
      t.ok(w.ms < 1_800, `answered after ${Math.round(w.ms)} ms of a 1-s wait`);
    }
    await c.etcd.restart(1);
    let ok: string | null = null;
    const until = Date.now() + 30_000;
    while (!ok && Date.now() < until) {
      const b = batch();
      const r = await postBatches(url, batchList(b)).catch(() => ({ status: 0, json: null }));
      if (r.status === 202) ok = b.id;
      else await sleep(500);
    }
    t.ok(ok, 'a submission is acknowledged again once etcd has a quorum');
    if (ok) t.same(await allCommitted(urlsOf(c, [2])[0] ?? '', [ok]), [], 'and commits');
    await c.etcd.restart(0);
    await sameHeadOf(c);
  });

  await t.test('a member whose log position was deleted catches up from a member', async (t) => {
    const client = new Etcd3({ hosts: c.etcd.endpoints });
    t.teardown(() => client.close());
    const st = await getJson(`${urlsOf(c, [2])[0]}/status`);
    const applied = Number(st.json.data.cluster.log.applied);
    await c.nodes[2]?.kill9();
    const ids: string[] = [];
    for (let k = 0; k < 10; k++) {
      const b = [batch(), batch()];
      const r = await postBatches(urlsOf(c, [k % 2])[0] ?? '', batchList(...b));
      t.equal(r.status, 202);
      ids.push(...b.map((x) => x.id));
    }
    // An envelope of the stopped member (appended just before it died): the others cut its block.
    const orphan = batch();
    const n2key = new Signer(readFileSync(join(c.dir, 'n2', 'keys', 'validator.priv'), 'utf8').trim());
    await client.put('cairn/log/orphan/1').value(encodeEnvelope(n2key, Date.now(), [orphan.bytes]));
    ids.push(orphan.id);
    // Two hundred more entries at once: the trim below deletes them in more than one
    // transaction of its own (128 keys each, etcd's limit).
    const bulk = Array.from({ length: 200 }, () => batch());
    await Promise.all(bulk.map((x, i) => client.put(`cairn/log/orphan/bulk-${i}`).value(encodeEnvelope(n2key, Date.now(), [x.bytes]))));
    ids.push(...bulk.map((x) => x.id));
    t.same(await allCommitted(urlsOf(c, [0])[0] ?? '', ids), []);
    t.same(await allCommitted(urlsOf(c, [1])[0] ?? '', [orphan.id]), [], 'a block opened by a member that is gone is cut by the others');
    // The live members (two) applied it all: the log is trimmed past the stopped member's position.
    let floor = 0;
    const until = Date.now() + 30_000;
    while (floor <= applied + 1 && Date.now() < until) {
      floor = Number((await client.get('cairn/floor').string()) ?? '0');
      await sleep(250);
    }
    t.ok(floor > applied + 1, `the log was trimmed to revision ${floor} (the stopped member applied ${applied})`);
    const left = await client.getAll().prefix('cairn/log/').maxModRevision(String(floor)).keys();
    t.equal(left.length, 0, 'no entry at or below the floor is left');
    t.ok(
      c.nodes.some((n) => /etcd member \S+ defragmented/.test(n?.log() ?? '')),
      'the retaining member defragmented etcd',
    );
    const node = await c.start(2);
    const h = await sameHeadOf(c);
    t.ok(h.num > 0);
    t.match(node.log(), /catching up from a member's blocks/);
    t.same(await allCommitted(node.ledgerUrl, ids), [], 'the batches it missed are committed there');
    // It follows the log again afterwards.
    const b = batch();
    t.equal((await postBatches(node.ledgerUrl, batchList(b))).status, 202);
    t.same(await allCommitted(urlsOf(c, [0])[0] ?? '', [b.id]), []);
    await sameHeadOf(c);
  });

  await t.test('a member that reads the log again after a stop takes the same entries as those that followed it live', async (t) => {
    // A writer other than a member (anyone who can write to etcd) puts two envelopes in one
    // transaction (one revision, keys not in key order), then writes one key of it again.
    // The live members take them from their watch; the stopped member reads them after its
    // restart. Both must take the same ones, or their chains would split.
    const client = new Etcd3({ hosts: c.etcd.endpoints });
    t.teardown(() => client.close());
    await sameHeadOf(c);
    const n2pub = new Signer(readFileSync(join(c.dir, 'n2', 'keys', 'validator.priv'), 'utf8').trim()).publicKey;
    const liveKey = `cairn/live/${n2pub}`;
    const record = (await client.get(liveKey).string()) ?? '';
    t.ok(record, 'the member has a live record');
    await c.nodes[2]?.kill9();
    // Its record, kept without its lease: the log stays retained for it while it is down.
    await client.put(liveKey).value(record);
    // Entries enough while it is down that its replay runs past the read-ahead bound (32 here).
    const filler: string[] = [];
    const codes = new Set<number>();
    for (let k = 0; k < 40; k++) {
      const b = batch();
      codes.add((await postBatches(urlsOf(c, [k % 2])[0] ?? '', batchList(b))).status);
      filler.push(b.id);
    }
    t.same([...codes], [202], 'forty lists acknowledged while the member is down');
    const n0key = new Signer(readFileSync(join(c.dir, 'n0', 'keys', 'validator.priv'), 'utf8').trim());
    const [first, second, again] = [batch(), batch(), batch()];
    const txn = await client
      .if('cairn/log/outside/none', 'Version', '==', 0)
      .then(
        client.put('cairn/log/outside/z').value(encodeEnvelope(n0key, Date.now(), [first.bytes])),
        client.put('cairn/log/outside/a').value(encodeEnvelope(n0key, Date.now(), [second.bytes])),
      )
      .commit();
    const shared = Number(txn.header.revision);
    await client.put('cairn/log/outside/z').value(encodeEnvelope(n0key, Date.now(), [again.bytes]));
    const live = urlsOf(c, [0, 1]);
    for (const url of live) {
      t.same(await allCommitted(url, [first.id, again.id]), [], `the transaction's first entry and the later write commit on ${url}`);
      const s = await getJson(`${url}/batch_statuses?id=${second.id}`);
      t.equal(s.json.data[0]?.status, 'UNKNOWN', `the second entry of revision ${shared} is passed over on ${url}`);
    }
    const node = await c.start(2);
    const h = await sameHeadOf(c);
    t.ok(h.num > 0, 'the restarted member has the same head as the others');
    t.same(await allCommitted(node.ledgerUrl, [first.id, again.id]), [], 'and the same batches');
    t.equal((await getJson(`${node.ledgerUrl}/batch_statuses?id=${second.id}`)).json.data[0]?.status, 'UNKNOWN');
    t.notMatch(node.log(), /catching up from a member's blocks/, 'it read them from the log, not from blocks');
    // Passed over the same entry (the status above). Its warning is not asserted: a replay
    // that pauses at the read-ahead bound right after the transaction's first entry reads on
    // from the next revision and never sees the second one.
    t.notMatch(node.log(), /cairn\/log\/outside\/z shares revision/, 'it did not pass over the first entry');
    t.match(node.log(), /reading pauses at revision \d+/, 'its replay paused at the read-ahead bound and went on');
    t.same(await allCommitted(node.ledgerUrl, filler), [], 'with every batch it missed');
    for (const n of c.nodes) t.notMatch(n?.log() ?? '', /diverged|chain differs/, 'no member raised the divergence alarm');

    // etcd's history compacted past the stopped member's position (an operator's compaction,
    // not the cluster's retention): it cannot read the log from there, so it takes blocks.
    const record2 = (await client.get(liveKey).string()) ?? '';
    await c.nodes[2]?.kill9();
    await client.put(liveKey).value(record2);
    const later = [batch(), batch()];
    const laterIds = later.map((x) => x.id);
    t.equal((await postBatches(live[0] ?? '', batchList(...later))).status, 202);
    t.same(await allCommitted(live[1] ?? '', laterIds), []);
    const now = await client.put('cairn/test/compact').value('1').exec();
    await client.kv.compact({ revision: now.header.revision });
    const back = await c.start(2);
    await sameHeadOf(c);
    // Compacted, as a rule. Its live record may name a revision past its last durable round
    // (entries that add nothing are applied without a write of their own): the retention may
    // then have deleted the entries after that round, and it finds them deleted first (one
    // run in about twenty under load). Either way it takes blocks.
    t.match(back.log(), /(history before revision \d+ was compacted|log before revision \d+ was deleted): catching up from a member's blocks/);
    t.same(await allCommitted(back.ledgerUrl, laterIds), [], 'the batches it missed are committed there');
    const b = batch();
    t.equal((await postBatches(back.ledgerUrl, batchList(b))).status, 202, 'it follows the log again afterwards');
    t.same(await allCommitted(live[0] ?? '', [b.id]), []);
    await sameHeadOf(c);
  });

  await t.test('a member whose watch of the log falls silent reads the log again from its position', async (t) => {
    const n2 = c.nodes[2];
    if (n2) await stopOrKill(n2);
    // Its first watch takes three entries and then stalls (the stream stays open, as a watch
    // whose stream hangs would): the follower's stall guard must notice and read again. The
    // stalled stream then resumes with what it held back, just after the follower started
    // again: nothing of it may be taken (it would move the new watch's position past entries
    // not taken yet).
    const node = await c.start(2, { CAIRN_TEST_CLUSTER_DEAF_WATCH: '3' });
    const ids: string[] = [];
    for (let k = 0; k < 9; k++) {
      const b = batch();
      t.equal((await postBatches(urlsOf(c)[k % 3] ?? '', batchList(b))).status, 202);
      ids.push(b.id);
    }
    const h = await sameHeadOf(c);
    t.ok(h.num > 0, `every member reached block ${h.num}`);
    t.match(
      node.log(),
      /cluster log follower made no progress for \d+ ms while the log holds entries from revision \d+ on .*: reading the log again from revision \d+/,
      'its stall guard noticed and read the log again',
    );
    t.same(await allCommitted(node.ledgerUrl, ids), [], 'and committed every batch, its own included');
    for (const n of c.nodes) t.notMatch(n?.log() ?? '', /diverged|chain differs/, 'no member raised the divergence alarm');
  });

  await t.test('a member whose committer fails a block write restarts it and reads the log again from its head', async (t) => {
    const n2 = c.nodes[2];
    if (n2) await stopOrKill(n2);
    // Its committer's second block transaction fails with EIO (the test hook models one
    // failure: the recovered committer writes normally). The ledger restarts the committer
    // from its last durable block, and the log is read again from the revision after it.
    const node = await c.start(2, { CAIRN_TEST_FAULTS: 'ledger.write:EIO@2' });
    const ids: string[] = [];
    for (let k = 0; k < 8; k++) {
      const b = batch();
      t.equal((await postBatches(urlsOf(c)[k % 2] ?? '', batchList(b))).status, 202);
      ids.push(b.id);
      await sleep(40); // several blocks, so that the failing write comes while the log goes on
    }
    const h = await sameHeadOf(c);
    t.ok(h.num > 0, `every member reached block ${h.num}`);
    t.match(node.log(), /EIO: injected fault at ledger\.write/, 'the block write failed there');
    t.match(node.log(), /committer restarted at block \d+/, 'its committer was restarted');
    t.same(await allCommitted(node.ledgerUrl, ids), [], 'every batch is committed there');
    const b = batch();
    t.equal((await postBatches(node.ledgerUrl, batchList(b))).status, 202, 'it acknowledges again');
    t.same(await allCommitted(urlsOf(c)[0] ?? '', [b.id]), []);
    await sameHeadOf(c);
    for (const n of c.nodes) t.notMatch(n?.log() ?? '', /diverged|chain differs/, 'no member raised the divergence alarm');
  });

  await t.test('a member whose state diverges raises the alarm and stops acknowledging; the others go on', async (t) => {
    const n2 = c.nodes[2];
    if (n2) await stopOrKill(n2);
    const node = await c.start(2, { CAIRN_TEST_CLUSTER_DIVERGE: '1' });
    // Lists of several batches: the hook drops one of each round there.
    for (let k = 0; k < 3; k++) t.equal((await postBatches(urlsOf(c, [0])[0] ?? '', batchList(batch(), batch(), batch()))).status, 202);
    let status = 200;
    let message = '';
    const until = Date.now() + 20_000;
    while (status !== 503 && Date.now() < until) {
      const r = await getJson(`${node.ledgerUrl}/status`);
      status = r.status;
      message = r.json.error?.message ?? '';
      await sleep(200);
    }
    t.equal(status, 503, 'the diverged member reports itself unavailable');
    t.match(message, /diverged/);
    const refused = await postBatches(node.ledgerUrl, batchList(batch()));
    t.equal(refused.status, 503, 'and acknowledges nothing');
    for (const u of urlsOf(c, [0, 1])) {
      t.equal((await getJson(`${u}/status`)).status, 200, `${u} stays healthy`);
      const b = batch();
      t.equal((await postBatches(u, batchList(b))).status, 202, `${u} still acknowledges`);
    }
    const seen = Date.now() + 10_000;
    while (!/another member's chain differs/.test(c.nodes[0]?.log() ?? '') && Date.now() < seen) await sleep(200);
    t.match(c.nodes[0]?.log() ?? '', /another member's chain differs/, 'a member of the majority names the one that differs');
  });
});
