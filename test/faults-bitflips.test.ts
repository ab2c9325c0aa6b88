/**
 * Wrong data is never served. Copies of a stopped node's data directory are damaged the way
 * a failing disk damages them, and the node started on each copy must never answer 200 with
 * bytes that differ from what was committed, never a 500, and never die by a signal (it may
 * refuse to start with a message naming the file, or answer 503 / 404):
 * - bit flips at seeded random places in ledger.mdb's data pages (8, and 64);
 * - one committed batch id altered everywhere it is stored;
 * - the file cut short by 64 KiB: a clear refusal.
 * Every record carries a checksum (src/store/checksum.ts), checked on every read.
 */
import t, { type Test } from 'tap';
import { closeSync, cpSync, mkdtempSync, openSync, readFileSync, rmSync, statSync, truncateSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { startTestNode } from './helpers/node.js';
import { startChild, startRefused, runToExit, TS_ARGS } from './helpers/child.js';
import { newSigner, intkeyBatch, batchList, postBatches, waitCommitted, getJson } from './helpers/batches.js';
import { PAGE, walkSnapshot } from '../src/store/pages.js';
import { newestSnapshot } from '../src/store/files.js';

const dirs: string[] = [];
t.teardown(() => {
  for (const d of dirs) rmSync(d, { recursive: true, force: true });
});
const temp = (): string => {
  const d = mkdtempSync(join(tmpdir(), 'cairn-flip-'));
  dirs.push(d);
  return d;
};

const base = temp();
/** What the intact node answered: URL path -> body. */
const reference = new Map<string, string>();
const batchIds: string[] = [];

t.before(async () => {
  const n = await startTestNode({}, base);
  const signer = newSigner();
  for (let i = 0; i < 24; i++) {
    const b = intkeyBatch(signer, [['set', `flip${i}`, i]]);
    const r = await postBatches(n.ledgerUrl, batchList(b));
    if (r.status !== 202) throw new Error(`setup: ${r.status}`);
    batchIds.push(b.id);
    await waitCommitted(n.ledgerUrl, [b.id]);
  }
  const paths = [
    '/blocks?limit=100',
    '/batches?limit=100',
    '/transactions?limit=100',
    '/state?limit=100',
    `/batch_statuses?id=${batchIds.join(',')}`,
  ];
  const blocks = (await getJson(`${n.ledgerUrl}/blocks?limit=100`)).json.data as Array<{ header_signature: string }>;
  for (const b of blocks) paths.push(`/blocks/${b.header_signature}`);
  for (const id of batchIds) paths.push(`/batches/${id}`);
  for (const p of paths) {
    const r = await fetch(`${n.ledgerUrl}${p}`);
    if (r.status !== 200) throw new Error(`setup: ${p} answered ${r.status}`);
    reference.set(p, (await r.text()).replaceAll(n.ledgerUrl, 'ORIGIN'));
  }
  await n.stop({ keepData: true });
});

/** xorshift32: the same flips for the same seed. */
function rng(seed: number): () => number {
  let x = seed >>> 0 || 1;
  return () => {
    x ^= x << 13;
    x >>>= 0;
    x ^= x >>> 17;
    x ^= x << 5;
    x >>>= 0;
    return x / 0x100000000;
  };
}

/** Starts a node on `dir` and checks every answer against the reference. */
async function probe(t: Test, dir: string, label: string): Promise<void> {
  let child: Awaited<ReturnType<typeof startChild>>;
  try {
    child = await startChild(dir);
  } catch (err) {
    // Refused at start: it must be an exit with a message, never a signal.
    const message = (err as Error).message;
    t.notMatch(message, /node exited with null/, `${label}: not killed by a signal`);
    t.match(message, /ledger\.mdb|damaged|corrupt|truncated/i, `${label}: refused, naming the damage`);
    return;
  }
  const died = async (): Promise<string> => {
    await new Promise((r) => setTimeout(r, 200));
    return `the node ended (exit ${child.child.exitCode}, signal ${child.child.signalCode}): ${child
      .log()
      .split('\n')
      .filter((l) => /error|warn|fatal|signal|Error/i.test(l))
      .slice(-8)
      .join('\n')}`;
  };
  try {
    const seen: Record<number, number> = {};
    const wrong: string[] = [];
    for (const [path, body] of reference) {
      const r = await fetch(`${child.ledgerUrl}${path}`).catch(() => null);
      if (r === null) {
        t.fail(await died());
        return;
      }
      const text = (await r.text()).replaceAll(child.ledgerUrl, 'ORIGIN');
      seen[r.status] = (seen[r.status] ?? 0) + 1;
      if (r.status === 200 && text !== body) wrong.push(`${path}: 200 with other bytes`);
      else if (r.status !== 200 && r.status !== 404 && r.status !== 503) wrong.push(`${path}: ${r.status} ${text.slice(0, 200)}`);
    }
    // A write on top: acknowledged, refused or read-only; never built on a damaged record.
    const w = await postBatches(child.ledgerUrl, batchList(intkeyBatch(newSigner(), [['set', 'after', 1]]))).catch(() => null);
    if (w === null) {
      t.fail(await died());
      return;
    }
    if (![202, 429, 503].includes(w.status)) wrong.push(`POST /batches: ${w.status}`);
    await new Promise((r) => setTimeout(r, 500));
    for (const path of ['/blocks?limit=100', '/state?limit=100']) {
      const r = await fetch(`${child.ledgerUrl}${path}`).catch(() => null);
      if (r === null) {
        t.fail(await died());
        return;
      }
      if (r.status !== 200 && r.status !== 404 && r.status !== 503) wrong.push(`${path} after a write: ${r.status}`);
    }
    t.same(wrong, [], `${label}: answers ${JSON.stringify(seen)}`);
    if (wrong.length)
      t.comment(
        child
          .log()
          .split('\n')
          .filter((l) => /error|warn/i.test(l))
          .slice(-10)
          .join('\n'),
      );
    t.equal(child.child.signalCode, null, `${label}: no signal`);
    t.equal(child.child.exitCode, null, `${label}: still running`);
  } finally {
    await child.kill();
  }
}

for (const [seed, flips] of [
  [1, 8],
  [2, 8],
  [3, 8],
  [4, 64],
  [5, 64],
] as const) {
  t.test(`${flips} bit flips in ledger.mdb (seed ${seed})`, async (t) => {
    const d = temp();
    cpSync(base, d, { recursive: true });
    const file = join(d, 'ledger.mdb');
    const buf = readFileSync(file);
    const next = rng(seed);
    // The data pages: past the two meta pages (those are checked at start, src/store/files.ts).
    for (let i = 0; i < flips; i++) {
      const at = 8192 + Math.floor(next() * (buf.length - 8192));
      buf[at] = (buf[at] as number) ^ (1 << Math.floor(next() * 8));
    }
    writeFileSync(file, buf);
    await probe(t, d, `seed ${seed}`);
  });
}

t.test('one committed batch id altered everywhere it is stored: never served', async (t) => {
  const d = temp();
  cpSync(base, d, { recursive: true });
  const file = join(d, 'ledger.mdb');
  const id = batchIds[10] as string;
  const forged = `${id.slice(0, -1)}${id.endsWith('0') ? '1' : '0'}`;
  const buf = readFileSync(file);
  let n = 0;
  for (const [from, to] of [
    [Buffer.from(id), Buffer.from(forged)],
    [Buffer.from(id, 'hex'), Buffer.from(forged, 'hex')],
  ] as const) {
    for (let i = buf.indexOf(from); i >= 0; i = buf.indexOf(from, i + 1)) {
      to.copy(buf, i);
      n++;
    }
  }
  writeFileSync(file, buf);
  t.ok(n >= 2, `altered in ${n} places`);
  await probe(t, d, 'altered id');
  // Also asked by its forged id: never found as committed.
  let child: Awaited<ReturnType<typeof startChild>> | undefined;
  try {
    child = await startChild(d);
  } catch {
    return; // refused: nothing served
  }
  try {
    const r = await fetch(`${child.ledgerUrl}/batches/${forged}`);
    t.not(r.status, 200, 'the forged id is not served');
    t.not(r.status, 500);
  } finally {
    await child.kill();
  }
});

t.test("one bit of a page's transaction id: refused at start, never a SIGSEGV on the first write", async (t) => {
  // LMDB changes a page in place when its transaction id says the running write made it: in
  // the read-only map, that is a SIGSEGV (seen on 35 of 38 pages of a ledger in one sweep).
  const d = temp();
  cpSync(base, d, { recursive: true });
  const file = join(d, 'ledger.mdb');
  const buf = readFileSync(file);
  const ps = 4096;
  const fd = openSync(file, 'r');
  const { problem, kinds } = walkSnapshot(fd, newestSnapshot(file));
  closeSync(fd);
  t.equal(problem, null, 'the copy is sound before the flip');
  const leaf = kinds.indexOf(PAGE.leaf);
  t.ok(leaf > 1, `leaf page ${leaf}`);
  buf.writeBigUInt64LE(buf.readBigUInt64LE(leaf * ps + 8) ^ (1n << 40n), leaf * ps + 8);
  writeFileSync(file, buf);
  const r = await startRefused(d);
  t.equal(r.code, 1, 'exit 1, not a signal');
  t.match(r.log, new RegExp(`ledger\\.mdb has a damaged page structure: .*page ${leaf}: written by transaction \\d+, after the last one`));
  await probe(t, d, 'page transaction id');
});

t.test('ledger.mdb cut short by 64 KiB: a clear refusal, no signal', async (t) => {
  const d = temp();
  cpSync(base, d, { recursive: true });
  const file = join(d, 'ledger.mdb');
  truncateSync(file, statSync(file).size - 64 * 1024);
  const r = await startRefused(d);
  t.equal(r.code, 1, 'exit 1, not a signal');
  t.match(r.log, /ledger\.mdb is \d+ bytes but its last transaction uses \d+ bytes: it was truncated/);
  t.match(r.log, /restore the directory from a backup/);
  const check = await runToExit(['src/cli/cairn.ts', 'check', '--data-dir', d], { ...process.env });
  t.equal(check.code, 1, 'check reports it');
  t.match(check.log, /truncated/);
});

t.test('cairn check finds a record that fails its checksum', async (t) => {
  const d = temp();
  cpSync(base, d, { recursive: true });
  const file = join(d, 'ledger.mdb');
  const buf = readFileSync(file);
  // A byte inside a stored block: its batch id as the block's protobuf holds it. Every copy
  // (a page the last transactions replaced can still hold an older one, unused).
  const id = Buffer.from(batchIds[5] as string);
  let copies = 0;
  for (let at = buf.indexOf(id); at >= 0; at = buf.indexOf(id, at + 1)) {
    buf[at + 3] = (buf[at + 3] as number) ^ 0x01;
    copies++;
  }
  t.ok(copies > 0, `found the block record (${copies} copies)`);
  writeFileSync(file, buf);
  const check = await runToExit(['src/cli/cairn.ts', 'check', '--data-dir', d], { ...process.env });
  t.equal(check.code, 1, `check exits 1: ${check.log.slice(-400)}`);
  t.match(check.log, /corrupt record in ledger\.mdb: ledger\.\w+/);
  void TS_ARGS;
});
