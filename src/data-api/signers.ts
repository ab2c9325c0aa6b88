/**
 * Who signs the transactions the JSON API builds. By default the node's own key (as
 * upstream's JSON submit signs with the daemon key), so the node's public key is the
 * agent the contracts see. A request may instead name, with query `signer=<public key>`,
 * one of the agent keys the operator placed in `<data dir>/keys/agents/` (one hex
 * private key per `*.priv` file): the node then signs as that agent. The directory is
 * re-read when an unknown key is asked for, so keys can be added without a restart.
 */
import { readdirSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import { Signer } from '../crypto/secp256k1.js';
import { dataErrors } from './errors.js';

export const PUBLIC_KEY_RE = /^0[23][0-9a-f]{64}$/;

export class Signers {
  readonly #node: Signer;
  readonly #dir: string;
  readonly #agents = new Map<string, Signer>();

  constructor(nodeSigner: Signer, dataDir: string) {
    this.#node = nodeSigner;
    this.#dir = join(dataDir, 'keys', 'agents');
  }

  get node(): Signer {
    return this.#node;
  }

  #rescan(): void {
    let files: string[];
    try {
      files = readdirSync(this.#dir).filter((f) => f.endsWith('.priv'));
    } catch {
      return;
    }
    for (const f of files) {
      try {
        const s = new Signer(readFileSync(join(this.#dir, f), 'utf8').trim());
        this.#agents.set(s.publicKey, s);
      } catch {
        // Not a key file: skipped.
      }
    }
  }

  /**
   * The signer a request asks for (query `signer`, as the route's writeQuery read it), or
   * the node's key. Checked here, when the handler asks, so its refusal keeps its place
   * after the checks of the path and body.
   */
  pick(pk: string | null): Signer {
    if (pk === null || pk === this.#node.publicKey) return this.#node;
    if (!PUBLIC_KEY_RE.test(pk)) {
      throw dataErrors.signerNotKey();
    }
    if (!this.#agents.has(pk)) this.#rescan();
    const s = this.#agents.get(pk);
    if (s === undefined) throw dataErrors.signerUnknown({ key: pk });
    return s;
  }
}
