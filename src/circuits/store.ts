/**
 * Persistent admin state in named sub-databases of the node's LMDB environment
 * (`circuits.*`): proposals and circuits as their canonical protobuf bytes (so every
 * member renders and hashes the same thing), the event log, and the circuits whose
 * members have not all reported ready yet. Every commit effect is one transaction.
 */
import type { Database, RootDatabase } from 'lmdb';
import { Circuit, CircuitProposal, decode, encode, type CircuitMsg, type ProposalMsg } from '../proto/circuits.js';
import type { EventType } from './json.js';
import { openStore } from '../store/checksum.js';
import { CIRCUITS_DB } from '../store/names.js';

export interface EventRecord {
  ts: number;
  type: EventType;
  mgmt: string;
  /** CircuitProposal bytes. */
  proposal: Uint8Array;
  /** Requester or voter public key (hex) for vote-like events. */
  key: string | null;
}

export interface ReadyRecord {
  kind: 'create' | 'disband';
  /** Commit time of the accepting vote; the ready event is stamped ts + 1. */
  ts: number;
  proposal: Uint8Array;
}

export interface NewEvent {
  type: EventType;
  ts: number;
  proposal: ProposalMsg;
  key: string | null;
}

export class AdminStore {
  readonly root: RootDatabase;
  readonly #proposals: Database<Buffer, string>;
  readonly #circuits: Database<Buffer, string>;
  readonly #events: Database<EventRecord, number>;
  readonly #ready: Database<ReadyRecord, string>;
  #nextEvent: number;
  /** The greatest event timestamp stored here. */
  lastTs: number;

  constructor(root: RootDatabase) {
    this.root = root;
    this.#proposals = openStore<Buffer, string>(root, CIRCUITS_DB.proposals, { binary: true });
    this.#circuits = openStore<Buffer, string>(root, CIRCUITS_DB.circuits, { binary: true });
    this.#events = openStore<EventRecord, number>(root, CIRCUITS_DB.events);
    this.#ready = openStore<ReadyRecord, string>(root, CIRCUITS_DB.ready);
    let last = 0;
    let lastTs = 0;
    for (const { key, value } of this.#events.getRange({ reverse: true, limit: 1 })) {
      last = key;
      lastTs = value.ts;
    }
    this.#nextEvent = last + 1;
    this.lastTs = lastTs;
  }

  proposal(id: string): ProposalMsg | undefined {
    const b = this.#proposals.get(id);
    return b ? decode<ProposalMsg>(CircuitProposal, b) : undefined;
  }

  proposals(): ProposalMsg[] {
    return Array.from(this.#proposals.getRange({}).map(({ value }) => decode<ProposalMsg>(CircuitProposal, value)));
  }

  circuit(id: string): CircuitMsg | undefined {
    const b = this.#circuits.get(id);
    return b ? decode<CircuitMsg>(Circuit, b) : undefined;
  }

  circuits(): CircuitMsg[] {
    return Array.from(this.#circuits.getRange({}).map(({ value }) => decode<CircuitMsg>(Circuit, value)));
  }

  readyPending(): Array<[string, ReadyRecord]> {
    return Array.from(this.#ready.getRange({}).map(({ key, value }) => [key, value] as [string, ReadyRecord]));
  }

  ready(id: string): ReadyRecord | undefined {
    return this.#ready.get(id);
  }

  /** Events with sequence number > `afterSeq` (all when 0). */
  *eventsAfter(afterSeq: number): Generator<[number, EventRecord]> {
    for (const { key, value } of this.#events.getRange({ start: afterSeq + 1 })) yield [key, value];
  }

  /**
   * One commit effect, atomically: proposal put/delete, circuit put/delete, ready
   * record put/delete, and the events it emits. Resolves with the stored events' numbers.
   */
  async commit(effect: {
    putProposal?: ProposalMsg;
    deleteProposal?: string;
    putCircuit?: CircuitMsg;
    deleteCircuit?: string;
    putReady?: [string, ReadyRecord];
    deleteReady?: string;
    events?: NewEvent[];
  }): Promise<Array<[number, EventRecord]>> {
    const stored: Array<[number, EventRecord]> = [];
    await this.root.transaction(() => {
      if (effect.deleteProposal !== undefined) void this.#proposals.remove(effect.deleteProposal);
      if (effect.putProposal) void this.#proposals.put(effect.putProposal.circuitId, Buffer.from(encode(CircuitProposal, effect.putProposal)));
      if (effect.deleteCircuit !== undefined) void this.#circuits.remove(effect.deleteCircuit);
      if (effect.putCircuit) void this.#circuits.put(effect.putCircuit.circuitId, Buffer.from(encode(Circuit, effect.putCircuit)));
      if (effect.deleteReady !== undefined) void this.#ready.remove(effect.deleteReady);
      if (effect.putReady) void this.#ready.put(effect.putReady[0], effect.putReady[1]);
      for (const e of effect.events ?? []) {
        const rec: EventRecord = {
          ts: e.ts,
          type: e.type,
          mgmt: e.proposal.circuitProposal.circuitManagementType,
          proposal: encode(CircuitProposal, e.proposal),
          key: e.key,
        };
        const seq = this.#nextEvent++;
        void this.#events.put(seq, rec);
        stored.push([seq, rec]);
      }
    });
    for (const [, r] of stored) this.lastTs = Math.max(this.lastTs, r.ts);
    return stored;
  }
}
