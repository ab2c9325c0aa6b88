/**
 * The integrity check of a stopped data directory (`npm run -s check`): every block
 * (signature, chain link, number, batch ids against the batches, state root present),
 * every batch and its transactions (signatures, payload hashes, index entries), the index
 * sizes, every pending record (checksum, decoding, signatures), and the head's whole state
 * (every record reachable from its checkpoint's root hashes to its key, and the deltas
 * after the checkpoint give the head's root, as a restart would load it).
 *
 * A transaction family is never damage by itself: a committed block records the families
 * the node executed (built in, or run by a transaction processor), and a pending batch may
 * wait for a processor of its family. The report names every family the chain holds; a
 * pending batch of a family neither built in, nor on the chain, nor listed by
 * `sawtooth.validator.transaction_families` is a note (it runs only where a processor of that
 * family connects), not a problem.
 */
import protobuf from 'protobufjs';
import type { RootDatabase } from 'lmdb';
import { Batch, BlockHeader, decode, type BatchMsg, type BlockHeaderMsg } from '../proto/index.js';
import { verify } from '../crypto/secp256k1.js';
import { verifyBatchList } from '../ledger/verify.js';
import { StateReader } from '../state/reader.js';
import { PRUNED_BELOW, PRUNED_BELOW_KEY } from '../state/deltas.js';
import { checkReplay } from '../state/engine.js';
import { openLedgerStores, HEAD, type ChainHead, type LedgerStores } from '../store/ledger-stores.js';
import { encodeIdRecord } from '../store/id-index.js';
import { checkRuns } from '../store/id-runs.js';
import { pendingRecordProblems, poolIdentityProblem } from '../store/preflight.js';
import { CorruptRecordError } from '../store/alarms.js';
import { ALL_FAMILY_NAMES, ANY_FAMILY, familyLookup, type FamilyLookup } from '../ledger/catalog.js';
import { readSetting } from '../families/settings.js';

/** The setting that, when set, lists the only families (name and version) a transaction may use. */
const FAMILIES_SETTING = 'sawtooth.validator.transaction_families';

export const NULL_BLOCK_ID = '0000000000000000';
/** ledger.meta key: state roots of blocks below this number were pruned (see prune.ts). */
export { PRUNED_BELOW_KEY };

/** A transaction family the chain holds: built into the node, or run by a transaction processor. */
export interface FamilySeen {
  name: string;
  version: string;
  builtIn: boolean;
}

export interface CheckReport {
  blocks: number;
  batches: number;
  transactions: number;
  pendingRecords: number;
  stateLeaves: number;
  /** The families of the committed transactions, built in first, by name and version. */
  families: FamilySeen[];
  /** Damage: a record that is missing, unreadable, or does not match what refers to it. */
  problems: string[];
  /** What is worth knowing and is no damage (a pending batch of a family no processor may serve). */
  notes: string[];
}

/** A batch's bytes as a one-batch BatchList, for the submission verifier. */
function asList(batch: Uint8Array): Uint8Array {
  return protobuf.Writer.create().uint32(10).bytes(batch).finish();
}

function batchProblem(bytes: Uint8Array, known: FamilyLookup): string | null {
  const r = verifyBatchList(asList(bytes), undefined, known);
  return r.ok ? null : r.message;
}

const familyKey = (name: string, version: string): string => `${name}\u0000${version}`;
/** The families the node carries. */
const builtIn = familyLookup(ALL_FAMILY_NAMES);
/** Any family with a name and a version: what a node with a transaction processor endpoint accepts. */
const anyFamily = familyLookup([...ALL_FAMILY_NAMES, ANY_FAMILY]);

/** The families `sawtooth.validator.transaction_families` lists at `root` (name\0version); empty when unset or unreadable. */
function settingFamilies(tree: StateReader, root: string): Set<string> {
  const out = new Set<string>();
  try {
    const value = readSetting((a) => tree.get(root, a), FAMILIES_SETTING);
    const list = value === undefined ? [] : (JSON.parse(value) as unknown);
    if (Array.isArray(list))
      for (const item of list) {
        const f = item as { family?: unknown; version?: unknown };
        if (typeof f.family === 'string' && typeof f.version === 'string') out.add(familyKey(f.family, f.version));
      }
  } catch {
    // Unset or not a list: no family named (the node ignores such a value too).
  }
  return out;
}

/** Splits a stored Block into header, id and the exact bytes of each batch. */
function splitBlock(bytes: Uint8Array): { header: Uint8Array; id: string; batches: Uint8Array[] } {
  const r = protobuf.Reader.create(bytes);
  let header: Uint8Array = new Uint8Array(0);
  let id = '';
  const batches: Uint8Array[] = [];
  while (r.pos < r.len) {
    const tag = r.uint32();
    if (tag === 10) header = r.bytes();
    else if (tag === 18) id = r.string();
    else if (tag === 26) batches.push(r.bytes());
    else r.skipType(tag & 7);
  }
  return { header, id, batches };
}

export function checkLedger(db: RootDatabase, pending: RootDatabase<Buffer, number>, dir: string): CheckReport {
  try {
    return walkLedger(db, pending, dir);
  } catch (err) {
    // A record the walk cannot go past (the head, the block-number index) failed its checksum.
    if (!(err instanceof CorruptRecordError)) throw err;
    return { blocks: 0, batches: 0, transactions: 0, pendingRecords: 0, stateLeaves: 0, families: [], problems: [err.message], notes: [] };
  }
}

function walkLedger(db: RootDatabase, pending: RootDatabase<Buffer, number>, dir: string): CheckReport {
  const s = openLedgerStores(db);
  const tree = new StateReader(s, { verify: true, leafEncoding: 'cbor' });
  const report: CheckReport = { blocks: 0, batches: 0, transactions: 0, pendingRecords: 0, stateLeaves: 0, families: [], problems: [], notes: [] };
  const problem = (p: string): void => void report.problems.push(p);
  const head = HEAD.get(s.meta);
  // The families of committed transactions: a block records that the node executed them.
  const onChain = new Map<string, FamilySeen>();
  const committed: FamilyLookup = (name, version) => {
    const f = anyFamily(name, version);
    if (f && !onChain.has(familyKey(name, version)))
      onChain.set(familyKey(name, version), { name, version, builtIn: builtIn(name, version) !== undefined });
    return f;
  };
  if (head) walkBlocks(s, tree, head, report, committed);
  else if (s.blockByNum.getKeysCount() > 0) problem('ledger.meta has no head but blocks are stored');
  report.families = [...onChain.values()].sort(
    (a, b) => Number(b.builtIn) - Number(a.builtIn) || a.name.localeCompare(b.name) || a.version.localeCompare(b.version),
  );

  // Pending pool: its batches are verified as at submission; a family nothing here names is a note.
  const listed = head ? settingFamilies(tree, head.stateRoot) : new Set<string>();
  const unnamed = new Map<string, string>();
  const identity = poolIdentityProblem(db, pending, dir);
  if (identity) problem(identity);
  for (const _ of pending.getRange({ start: 0 })) report.pendingRecords++;
  for (const p of pendingRecordProblems(pending, dir, (bytes, where) => {
    const bad = batchProblem(bytes, (name, version) => {
      const f = anyFamily(name, version);
      const key = familyKey(name, version);
      if (f && !builtIn(name, version) && !onChain.has(key) && !listed.has(key) && !unnamed.has(key))
        unnamed.set(key, `${where}: family ${JSON.stringify(name)} version ${JSON.stringify(version)}`);
      return f;
    });
    return bad ? `${where}: ${bad}` : null;
  }))
    problem(p);
  for (const where of unnamed.values())
    report.notes.push(`${where} is neither built in nor on the chain: the batch waits for a transaction processor of that family`);
  return report;
}

/** Every block from genesis to the head, and the head's state; `known` tells (and records) the families of their transactions. */
function walkBlocks(s: LedgerStores, tree: StateReader, head: ChainHead, report: CheckReport, known: FamilyLookup): void {
  const problem = (p: string): void => void report.problems.push(p);
  const prunedBelow = PRUNED_BELOW.get(s.meta) ?? 0;
  let prev = NULL_BLOCK_ID;
  for (let num = 0; num <= head.blockNum; num++) {
    const where = `block ${num}`;
    try {
      prev = checkBlock(num, where, prev);
    } catch (err) {
      // A record that fails its checksum: named, and the walk goes on.
      if (!(err instanceof CorruptRecordError)) throw err;
      problem(`${where}: ${err.message}`);
      prev = '';
    }
  }
  function checkBlock(num: number, where: string, prev: string): string {
    const id = s.blockByNum.get(num);
    if (id === undefined) {
      problem(`${where}: missing from the block-number index`);
      return '';
    }
    const bytes = s.blocks.get(id);
    if (bytes === undefined) {
      problem(`${where} (${id}): block record missing`);
      return id;
    }
    report.blocks++;
    let blk: ReturnType<typeof splitBlock>;
    let h: BlockHeaderMsg;
    try {
      blk = splitBlock(bytes);
      h = decode(BlockHeader, blk.header);
    } catch {
      problem(`${where} (${id}): not a decodable block`);
      return id;
    }
    if (blk.id !== id) problem(`${where} (${id}): stored under another id than its own ${blk.id}`);
    if (!verify(id, blk.header, h.signerPublicKey)) problem(`${where} (${id}): bad block signature`);
    if (Number(h.blockNum) !== num) problem(`${where} (${id}): header says block_num ${Number(h.blockNum)}`);
    if (prev !== '' && h.previousBlockId !== prev)
      problem(`${where} (${id}): previous_block_id ${h.previousBlockId} is not block ${num - 1} ${prev}`);
    if (num >= prunedBelow && !tree.hasRoot(h.stateRootHash)) problem(`${where} (${id}): state root ${h.stateRootHash} is missing`);
    if (h.batchIds.length !== blk.batches.length)
      problem(`${where} (${id}): header lists ${h.batchIds.length} batches, block holds ${blk.batches.length}`);
    const ids: Array<{ id: string; txns: string[] }> = [];
    blk.batches.forEach((bb, bi) => {
      report.batches++;
      let b: BatchMsg;
      try {
        b = decode(Batch, bb);
      } catch {
        problem(`${where} batch ${bi}: not decodable`);
        return;
      }
      const bwhere = `${where} batch ${bi} (${b.headerSignature})`;
      if (h.batchIds[bi] !== b.headerSignature) problem(`${bwhere}: header lists batch id ${h.batchIds[bi]} here`);
      // Block 0 holds the node's own genesis batch, checked the same way.
      const bad = batchProblem(bb, known);
      if (bad) problem(`${bwhere}: ${bad}`);
      ids.push({ id: b.headerSignature, txns: b.transactions.map((t) => t.headerSignature) });
      report.transactions += b.transactions.length;
    });
    idRecordProblems(s, num, ids, (p) => problem(`${where} (${id}): ${p}`));
    return id;
  }
  if (head.blockId !== prev) problem(`head ${head.blockNum} ${head.blockId} is not the last stored block ${prev}`);
  for (const key of s.blockIds.getKeys({ start: head.blockNum + 1 }))
    problem(`id record of block ${key}: there is no such block (the head is ${head.blockNum})`);
  checkRuns(s, head.blockNum, problem);

  // The head's state: it loads as a restart loads it, and every reachable record is read
  // and hash-checked.
  try {
    checkReplay(s, head, 'cbor');
  } catch (err) {
    problem(`head state root ${head.stateRoot}: ${(err as Error).message}`);
  }
  try {
    for (const _ of tree.entries(head.stateRoot, '')) report.stateLeaves++;
  } catch (err) {
    problem(`head state root ${head.stateRoot}: ${(err as Error).message}`);
  }
}

/**
 * The id and receipt records of block `num` against the ids its batches carry. A data
 * directory from before these records has none: the node builds them on its next start.
 */
function idRecordProblems(s: LedgerStores, num: number, ids: Array<{ id: string; txns: string[] }>, problem: (p: string) => void): void {
  const rec = s.blockIds.get(num);
  if (!rec) return problem('its id record is missing (the node builds it on its next start if the old id indexes are there)');
  let want: Buffer;
  try {
    want = encodeIdRecord(ids);
  } catch (err) {
    return problem(`its ids cannot be indexed: ${(err as Error).message}`);
  }
  if (!want.equals(rec)) problem('its id record does not list its batch and transaction ids');
  const receipts = s.receipts.get(num);
  const txns = ids.reduce((n, b) => n + b.txns.length, 0);
  if (!receipts || receipts.length < 4 || receipts.readUInt32LE(0) !== txns) problem(`its receipts record does not hold ${txns} receipts`);
}
