/**
 * Makes a secp256k1 key pair: `npm run -s keygen -- --out data/keys/agents/NAME.priv`
 * writes the hex private key to a new file (mode 0600; an existing file is never
 * overwritten) and prints only the public key, e.g. for `?signer=` on the data API or a
 * line of the admin keys file. --out is required: a key that is only printed would be lost.
 */
import { writeFileSync, chmodSync, existsSync } from 'node:fs';
import { dirname } from 'node:path';
import { randomPrivateKey, Signer } from '../crypto/secp256k1.js';
import { makeDirs } from '../store/dirs.js';
import { fsReason, InputError, isMain, jsonRequested, Output, parseOrUsage, runCommand, UsageError } from './args.js';

export const USAGE = `usage: cairn keygen --out FILE [--json] [--quiet]
Writes a new secp256k1 private key (hex) to FILE with mode 0600 (never overwrites) and
prints its public key (--json: {"public_key", "file"}). Offline: it talks to no node.
For data API agent keys: --out data/keys/agents/NAME.priv
exit status: 0 written, 1 the file could not be written, 2 usage or input error (FILE exists, its directory cannot be made)
`;

export function run(argv: string[]): number {
  const args = parseOrUsage(argv, ['out']);
  if (args.help) {
    process.stdout.write(USAGE);
    return 0;
  }
  const out = args.options.get('out');
  if (!out) throw new UsageError('--out FILE is required');
  if (args.positional.length > 0) throw new UsageError(`unexpected argument ${args.positional[0]}`);
  if (existsSync(out)) throw new InputError(`--out: ${out} exists (keys are never overwritten): name a new file`);
  try {
    makeDirs(dirname(out), 0o700);
  } catch (err) {
    throw new InputError(`--out: cannot make the directory ${dirname(out)}: ${fsReason(err)}`);
  }
  const hex = randomPrivateKey();
  try {
    writeFileSync(out, `${hex}\n`, { mode: 0o600, flag: 'wx' });
    chmodSync(out, 0o600);
  } catch (err) {
    const code = (err as NodeJS.ErrnoException).code;
    if (code === 'EEXIST') throw new InputError(`--out: ${out} exists (keys are never overwritten): name a new file`);
    throw new InputError(`--out: cannot write ${out}: ${fsReason(err)}`);
  }
  const publicKey = new Signer(hex).publicKey;
  new Output(args).result({ public_key: publicKey, file: out }, publicKey);
  return 0;
}

if (isMain(import.meta.url)) void runCommand('cairn keygen', USAGE, () => run(process.argv.slice(2)), jsonRequested(process.argv));
