/**
 * The signature and structure checks of a circuit's batches, in the node ledger's verify
 * workers (never on the HTTP thread), with the batches already checked remembered by a hash
 * of their bytes: a batch taken at intake or forwarded is not checked again when it comes
 * back in a proposal. The hash covers the whole batch, so a changed byte is checked anew.
 */
import { log } from '../log.js';
import type { VerifyResult } from '../ledger/verify.js';
import { SCABBARD_FAMILY_NAMES } from './sabre.js';
import { BatchListMsg, decode, encode } from './proto.js';
import { batchIdOf, hex } from './records.js';

/**
 * Signature and structure checks of BatchList bodies against a family list, one verdict per
 * body, off the main thread (the node ledger's verify workers).
 */
export type BodyVerifier = (bodies: readonly Uint8Array[], families: string[]) => Promise<VerifyResult[]>;

/** A batch that failed the signature and structure checks. */
export interface Forged {
  id: string;
  message: string;
}

/** Batches remembered as checked, at most (the oldest are forgotten first). */
const CHECKED_MAX = 65_536;

/** A batch's id for a log line, or a placeholder when the bytes are not a Batch. */
const idForLog = (bytes: Uint8Array): string => {
  try {
    return batchIdOf(bytes) || '(no id)';
  } catch {
    return '(not a Batch)';
  }
};
/** A batch alone in a BatchList: the form the verify workers check (one verdict per batch). */
const asList = (bytes: Uint8Array): Uint8Array => encode(BatchListMsg, { batches: [bytes] });
/** Peer-supplied text in a log line, bounded. */
export const short = (m: string): string => (m.length > 200 ? `${m.slice(0, 200)}…` : m);

export class BatchChecks {
  readonly #checked = new Set<string>();

  constructor(
    private readonly verify: BodyVerifier,
    private readonly label: string,
  ) {}

  /** A submitted BatchList: the same verdict as the node ledger's intake gives (Sabre only). */
  async list(body: Uint8Array): Promise<VerifyResult> {
    const [v] = await this.verify([body], SCABBARD_FAMILY_NAMES);
    if (!v) throw new Error('the verify workers gave no verdict');
    return v;
  }

  /** Remembers a batch as checked (by whoever called, or built by this node). */
  note(bytes: Uint8Array): void {
    this.#checked.add(hex(bytes));
    if (this.#checked.size > CHECKED_MAX) {
      for (const old of this.#checked) {
        this.#checked.delete(old);
        if (this.#checked.size <= CHECKED_MAX) break;
      }
    }
  }

  /**
   * Checks batches one by one; the first that fails, or null when every batch passes. A
   * failure of the workers themselves counts as a failed check.
   */
  async batches(batches: readonly Uint8Array[]): Promise<Forged | null> {
    const todo = batches.filter((bytes) => !this.#checked.has(hex(bytes)));
    if (todo.length === 0) return null;
    try {
      const results = await this.verify(
        todo.map((b) => asList(b)),
        SCABBARD_FAMILY_NAMES,
      );
      for (const [i, b] of todo.entries()) {
        const r = results[i];
        if (!r) return { id: idForLog(b), message: 'no verdict' };
        if (!r.ok) return { id: idForLog(b), message: short(r.message) };
      }
      for (const b of todo) this.note(b);
      return null;
    } catch (err) {
      return { id: '(any)', message: `the signature checks failed: ${short((err as Error).message)}` };
    }
  }

  /** Checks the batches of an encoded BatchList (a proposal's or a round's). */
  encoded(batches: Uint8Array): Promise<Forged | null> {
    let list: Buffer[];
    try {
      list = decode<{ batches: Buffer[] }>(BatchListMsg, batches).batches;
    } catch {
      return Promise.resolve({ id: '(none)', message: 'the batches are not an encoded BatchList' });
    }
    return this.batches(list);
  }

  /**
   * Forwarded batches (coordinator): the ones that pass; a batch that fails is dropped with
   * a warning, never stored nor proposed.
   */
  async forwarded(fresh: Array<{ from: string; id: string; bytes: Uint8Array }>): Promise<Array<{ id: string; bytes: Uint8Array }>> {
    const results = await this.verify(
      fresh.map((f) => asList(f.bytes)),
      SCABBARD_FAMILY_NAMES,
    );
    const good: Array<{ id: string; bytes: Uint8Array }> = [];
    for (const [i, f] of fresh.entries()) {
      const r = results[i];
      if (r?.ok && r.batches.length === 1 && r.batches[0]?.id === f.id) good.push({ id: f.id, bytes: f.bytes });
      else
        log.warn(
          `${this.label}: batch ${f.id} forwarded by ${f.from} fails the signature checks (${short(r && !r.ok ? r.message : 'no verdict')}); dropped`,
        );
    }
    return good;
  }
}
