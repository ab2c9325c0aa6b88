/**
 * The admin keys file: one lowercase hex public key per line (blank lines and `#`
 * comments ignored). A key listed there holds every permission. The file is re-read
 * whenever its size, mtime or inode changes; a missing file means no admin keys.
 */
import { readFileSync, statSync } from 'node:fs';
import { log } from '../log.js';

export class AdminKeys {
  readonly #file: string;
  #stamp = '';
  #keys = new Set<string>();

  constructor(file: string) {
    this.#file = file;
  }

  has(publicKey: string): boolean {
    this.#refresh();
    return this.#keys.has(publicKey);
  }

  #refresh(): void {
    let stamp: string;
    try {
      const st = statSync(this.#file);
      stamp = `${st.ino}:${st.size}:${st.mtimeMs}`;
    } catch {
      stamp = 'missing';
    }
    if (stamp === this.#stamp) return;
    this.#stamp = stamp;
    if (stamp === 'missing') {
      this.#keys = new Set();
      return;
    }
    try {
      const lines = readFileSync(this.#file, 'utf8').split(/\r?\n/);
      this.#keys = new Set(lines.map((l) => l.trim().toLowerCase()).filter((l) => l !== '' && !l.startsWith('#')));
      log.info(`admin keys file ${this.#file}: ${this.#keys.size} key(s)`);
    } catch (err) {
      this.#keys = new Set();
      log.warn(`cannot read admin keys file ${this.#file}`, err);
    }
  }
}
