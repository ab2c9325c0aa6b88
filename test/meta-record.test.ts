/**
 * The ledger's meta records (src/store/meta-record.ts): each key read back with its type, a
 * missing one as undefined, and a value of another shape refused as a damaged record
 * (CorruptRecordError) instead of being handed on under the wrong type.
 */
import t from 'tap';
import fs from 'node:fs';
import os from 'node:os';
import { join } from 'node:path';
import { open } from 'lmdb';
import { CorruptRecordError } from '../src/store/alarms.js';
import { HEAD, openLedgerStores } from '../src/store/ledger-stores.js';
import { fields, isCount, isText, MetaRecord } from '../src/store/meta-record.js';
import { CHECKPOINT, PRUNED_BELOW } from '../src/state/deltas.js';
import { ROUND } from '../src/scabbard/records.js';

/** The tap test object (the callback parameter of t.test). */
type TapTest = Parameters<Parameters<typeof t.test>[0]>[0];

function stores(t: TapTest) {
  const dir = fs.mkdtempSync(join(os.tmpdir(), 'cairn-meta-'));
  const root = open({ path: join(dir, 'ledger.mdb'), maxDbs: 64 });
  t.teardown(async () => {
    await root.close();
    fs.rmSync(dir, { recursive: true, force: true });
  });
  return openLedgerStores(root);
}

t.test('each record reads back what was written, typed; absent is undefined', async (t) => {
  const s = stores(t);
  t.equal(HEAD.get(s.meta), undefined);
  const head = { blockId: 'b'.repeat(128), blockNum: 7, stateRoot: 'r'.repeat(64) };
  await HEAD.put(s.meta, head);
  await CHECKPOINT.put(s.meta, { blockNum: 5, root: 'c'.repeat(64) });
  await PRUNED_BELOW.put(s.meta, 3);
  await ROUND.put(s.meta, { height: 2, ts: 1700000000000 });
  t.same(HEAD.get(s.meta), head);
  t.equal(HEAD.get(s.meta)?.blockNum, 7);
  t.same(CHECKPOINT.get(s.meta), { blockNum: 5, root: 'c'.repeat(64) });
  t.equal(PRUNED_BELOW.get(s.meta), 3);
  t.same(ROUND.get(s.meta), { height: 2, ts: 1700000000000 });
  t.same(ROUND.entry({ height: 3, ts: 1 }), ['round', { height: 3, ts: 1 }], 'a round hands its record to the chain writer as a pair');
});

t.test('a value of another shape is a damaged record, named by its key', async (t) => {
  const s = stores(t);
  await s.meta.put('head', { blockId: 'x', blockNum: '7', stateRoot: 'r' });
  t.throws(() => HEAD.get(s.meta), CorruptRecordError);
  t.throws(() => HEAD.get(s.meta), /meta key head/);
  await s.meta.put('state_pruned_below', -1);
  t.throws(() => PRUNED_BELOW.get(s.meta), CorruptRecordError, 'a negative count');
  await s.meta.put('state_pruned_below', 'three');
  t.throws(() => PRUNED_BELOW.get(s.meta), CorruptRecordError, 'text for a count');
});

t.test('the shape checks', async (t) => {
  t.ok(isCount(0) && isCount(2 ** 40));
  t.notOk(isCount(1.5) || isCount(-1) || isCount('1') || isCount(Number.NaN));
  t.ok(isText('') && !isText(1));
  const pair = fields<{ a: string; b: number }>({ a: 'string', b: 'number' });
  t.ok(pair({ a: 'x', b: 1, extra: true }), 'more fields are allowed');
  t.notOk(pair({ a: 'x' }) || pair(null) || pair('x') || pair({ a: 1, b: 1 }));
  t.equal(new MetaRecord('k', isText).key, 'k');
});
