/**
 * Data-change event ids. Every submission through the data API (a JSON mutation or a
 * client-signed BatchList) gets a fresh event id naming "the data changes these batches
 * make when they commit". The mapping is written from the HTTP thread into two
 * sub-databases of its own (never the ledger's), before the answer goes out:
 * `data.events` (event id → batch ids) and `data.batch_events` (batch id → event id).
 */
import { randomUUID } from 'node:crypto';
import type { Database, RootDatabase } from 'lmdb';
import { DATA_DB, readModelDbName } from '../store/names.js';
import { openStore } from '../store/checksum.js';

export { DATA_DB };

/** Event ids are UUIDs: never confused with 128-hex batch ids. */
export const EVENT_ID_RE = /^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/;

interface EventRecord {
  batch_ids: string[];
}

export class EventStore {
  readonly #root: RootDatabase;
  readonly #events: Database<EventRecord, string>;
  readonly #batchEvents: Database<string, string>;

  /** `prefix`: the ledger's ('' for the node's own; a circuit ledger's keeps its events apart). */
  constructor(root: RootDatabase, prefix = '') {
    this.#root = root;
    this.#events = openStore<EventRecord, string>(root, readModelDbName(prefix, DATA_DB.events));
    this.#batchEvents = openStore<string, string>(root, readModelDbName(prefix, DATA_DB.batchEvents));
  }

  /** Creates an event for `batchIds` and waits until it is on disk. */
  async record(batchIds: string[]): Promise<string> {
    const eventId = randomUUID();
    await this.#root.transaction(() => {
      void this.#events.put(eventId, { batch_ids: batchIds });
      for (const id of batchIds) void this.#batchEvents.put(id, eventId);
    });
    return eventId;
  }

  batchesOf(eventId: string): string[] | undefined {
    return this.#events.get(eventId)?.batch_ids;
  }

  eventOf(batchId: string): string | undefined {
    return this.#batchEvents.get(batchId);
  }
}
