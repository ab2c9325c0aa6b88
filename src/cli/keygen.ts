/**
 * Makes a secp256k1 key pair: `npm run -s keygen -- --out data/keys/agents/NAME.priv`
 * writes the hex private key to a new file (mode 0600; an existing file is never
 * overwritten) and prints only the public key, e.g. for `?signer=` on the data API or a
 * line of the admin keys file. --out is required: a key that is only printed would be lost.
 */
import { mkdirSync, writeFileSync, chmodSync } from 'node:fs';
import { dirname } from 'node:path';
import { randomPrivateKey, Signer } from '../crypto/secp256k1.js';
import { isMain, parseCliArgs, runCommand, type Args } from './args.js';

export const USAGE = `usage: cairn keygen --out FILE [--json]
Writes a new secp256k1 private key (hex) to FILE with mode 0600 (never overwrites) and
prints its public key (--json: {"public_key", "file"}). Offline: it talks to no node.
For data API agent keys: --out data/keys/agents/NAME.priv
`;

export function run(argv: string[]): number {
  let args: Args;
  const json = argv.includes('--json');
  try {
    args = parseCliArgs(
      argv.filter((a) => a !== '--json'),
      ['out'],
    );
  } catch (err) {
    process.stderr.write(`keygen: ${(err as Error).message}\n${USAGE}`);
    return 2;
  }
  if (args.help) {
    process.stdout.write(USAGE);
    return 0;
  }
  const out = args.options.get('out');
  if (!out || args.positional.length > 0) {
    process.stderr.write(`keygen: ${out ? `unexpected argument ${args.positional[0]}` : '--out FILE is required'}\n${USAGE}`);
    return 2;
  }
  const hex = randomPrivateKey();
  try {
    mkdirSync(dirname(out), { recursive: true, mode: 0o700 });
    writeFileSync(out, `${hex}\n`, { mode: 0o600, flag: 'wx' });
    chmodSync(out, 0o600);
  } catch (err) {
    const code = (err as NodeJS.ErrnoException).code;
    process.stderr.write(
      `keygen: cannot write ${out}: ${code === 'EEXIST' ? 'the file exists (keys are never overwritten)' : (code ?? String(err))}\n`,
    );
    return 1;
  }
  const publicKey = new Signer(hex).publicKey;
  process.stdout.write(json ? `${JSON.stringify({ public_key: publicKey, file: out })}\n` : `${publicKey}\n`);
  return 0;
}

if (isMain(import.meta.url)) void runCommand('keygen', USAGE, () => run(process.argv.slice(2)));
