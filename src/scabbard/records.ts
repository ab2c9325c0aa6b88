/**
 * What a circuit's ledger stores besides the chain (its intake, the batch statuses, the
 * round log, the round meta) and the names both of its threads use: the HTTP thread (intake,
 * reads) and its committer (rounds).
 */
import type { Database, RootDatabase } from 'lmdb';
import { Batch, decode as decodePb } from '../proto/index.js';
import { sha256 } from '../crypto/secp256k1.js';
import { openLedgerStores, type InvalidRecord, type LedgerStores } from '../store/ledger-stores.js';
import { scabbardDbNames } from '../store/names.js';
import { openStore } from '../store/checksum.js';
import { fields, MetaRecord } from '../store/meta-record.js';
import type { BuiltBlock } from '../ledger/block-builder.js';
import type { RoundRecordMsg } from './proto.js';

/** A settled batch: committed or invalid, at the round's time. */
export interface StatusRecord {
  s: 'C' | 'I';
  ts: number;
  txns: string[];
  invalid?: InvalidRecord['invalid_transactions'];
}

/** An accepted batch, not settled yet. */
export interface IntakeRecord {
  bytes: Buffer;
  at: number;
  seq: number;
}

/** Meta key of the last written round's height and time. */
export const ROUND_KEY = 'round';

export interface RoundMeta {
  height: number;
  ts: number;
}

export const ROUND = new MetaRecord<RoundMeta>(ROUND_KEY, fields<RoundMeta>({ height: 'number', ts: 'number' }));

export interface CircuitStores {
  ledger: LedgerStores;
  intake: Database<IntakeRecord, string>;
  status: Database<StatusRecord, string>;
  rounds: Database<RoundRecordMsg, number>;
}

/** Store prefix of a circuit ledger. */
export function scabbardPrefix(circuitId: string, serviceId: string): string {
  return `scabbard.${circuitId}.${serviceId}`;
}

export function openCircuitStores(db: RootDatabase, prefix: string): CircuitStores {
  const n = scabbardDbNames(prefix);
  return {
    ledger: openLedgerStores(db, prefix),
    intake: openStore<IntakeRecord, string>(db, n.intake),
    status: openStore<StatusRecord, string>(db, n.status),
    rounds: openStore<RoundRecordMsg, number>(db, n.rounds),
  };
}

export const hex = (b: Uint8Array | string): string => sha256(b).toString('hex');

export const batchIdOf = (bytes: Uint8Array): string => decodePb(Batch, bytes).headerSignature;

/** What every member must agree a round gave besides its root: which batches went in, which failed and why. */
export function roundVerdicts(built: BuiltBlock): string {
  return hex(
    JSON.stringify([built.included.map((i) => i.entry.id), built.invalid.map((i) => [i.entry.id, i.record.invalid_transactions[0]?.message ?? ''])]),
  );
}

/** The state root a round gives. */
export const roundRoot = (built: BuiltBlock): string => built.head?.stateRoot ?? built.parent.stateRoot;
