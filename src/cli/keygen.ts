/**
 * Makes a secp256k1 key pair: `npm run -s keygen -- --out data/keys/agents/NAME.priv`
 * writes the hex private key to a new file (mode 0600; an existing file is never
 * overwritten) and prints only the public key, e.g. for `?signer=` on the data API or a
 * line of the admin keys file. --out is required: a key that is only printed would be lost.
 */
import { mkdirSync, writeFileSync, chmodSync } from 'node:fs';
import { dirname } from 'node:path';
import { randomPrivateKey, Signer } from '../crypto/secp256k1.js';
import { isMain, parseOrUsage, runCommand, UsageError } from './args.js';

export const USAGE = `usage: cairn keygen --out FILE [--json]
Writes a new secp256k1 private key (hex) to FILE with mode 0600 (never overwrites) and
prints its public key (--json: {"public_key", "file"}). Offline: it talks to no node.
For data API agent keys: --out data/keys/agents/NAME.priv
`;

export function run(argv: string[]): number {
  const args = parseOrUsage(argv, ['out']);
  if (args.help) {
    process.stdout.write(USAGE);
    return 0;
  }
  const json = args.flags.has('json');
  const out = args.options.get('out');
  if (!out) throw new UsageError('--out FILE is required');
  if (args.positional.length > 0) throw new UsageError(`unexpected argument ${args.positional[0]}`);
  const hex = randomPrivateKey();
  try {
    mkdirSync(dirname(out), { recursive: true, mode: 0o700 });
    writeFileSync(out, `${hex}\n`, { mode: 0o600, flag: 'wx' });
    chmodSync(out, 0o600);
  } catch (err) {
    const code = (err as NodeJS.ErrnoException).code;
    throw new Error(`cannot write ${out}: ${code === 'EEXIST' ? 'the file exists (keys are never overwritten)' : (code ?? String(err))}`);
  }
  const publicKey = new Signer(hex).publicKey;
  process.stdout.write(json ? `${JSON.stringify({ public_key: publicKey, file: out })}\n` : `${publicKey}\n`);
  return 0;
}

if (isMain(import.meta.url)) void runCommand('cairn keygen', USAGE, () => run(process.argv.slice(2)), process.argv.includes('--json'));
