/**
 * `--payloads FILE`: pre-built batch lists, so a user's own transaction family can be driven.
 * One BatchList per line, base64 or hex (blank lines and lines starting with # are skipped);
 * the ids of its batches are read from the list itself for commit tracking.
 */
import { readFileSync } from 'node:fs';
import { BatchList } from '../proto/index.js';
import { isHexId } from '../codec/hex.js';
import type { Batch } from './generator.js';
import { fsReason, InputError } from '../cli/args.js';

/** The batch lists of `file`; an unreadable file or line is a usage error (exit 2, before any load). */
export function loadPayloads(file: string): Batch[] {
  let text: string;
  try {
    text = readFileSync(file, 'utf8');
  } catch (err) {
    throw new InputError(`--payloads: cannot read the payload file ${file}: ${fsReason(err)}`);
  }
  const out: Batch[] = [];
  const lines = text.split('\n');
  for (let n = 0; n < lines.length; n++) {
    const line = (lines[n] as string).trim();
    if (line === '' || line.startsWith('#')) continue;
    const where = `${file} line ${n + 1}`;
    const hex = /^[0-9a-fA-F]+$/.test(line) && line.length % 2 === 0;
    if (!hex && !/^[A-Za-z0-9+/]+={0,2}$/.test(line)) throw new InputError(`--payloads: ${where}: not a base64 or hex BatchList`);
    const body = Buffer.from(line, hex ? 'hex' : 'base64');
    let ids: string[];
    try {
      const list = BatchList.decode(body) as unknown as { batches?: Array<{ headerSignature?: string }> };
      ids = (list.batches ?? []).map((b) => b.headerSignature ?? '');
    } catch (err) {
      throw new InputError(`--payloads: ${where}: not a BatchList (${(err as Error).message})`);
    }
    if (ids.length === 0 || ids.some((id) => !isHexId(id)))
      throw new InputError(`--payloads: ${where}: a BatchList needs batches with 128-hex header signatures`);
    out.push({ ids, body });
  }
  if (out.length === 0) throw new InputError(`--payloads: ${file} holds no batch list`);
  return out;
}
