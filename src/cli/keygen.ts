/**
 * Makes a secp256k1 key pair: `npm run -s keygen -- --out data/keys/agents/NAME.priv`
 * writes the hex private key to a new file (mode 0600; an existing file is never
 * overwritten) and prints only the public key, e.g. for `?signer=` on the data API or a
 * line of the admin keys file. --out is required: a key that is only printed would be lost.
 */
import { mkdirSync, writeFileSync, chmodSync } from 'node:fs';
import { dirname } from 'node:path';
import { randomPrivateKey, Signer } from '../crypto/secp256k1.js';
import { parseCliArgs, type Args } from './args.js';

const USAGE = `usage: keygen --out FILE
Writes a new secp256k1 private key (hex) to FILE with mode 0600 (never overwrites) and
prints its public key. For data API agent keys: --out data/keys/agents/NAME.priv
`;

function main(): number {
  let args: Args;
  try {
    args = parseCliArgs(process.argv.slice(2), ['out']);
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
  process.stdout.write(`${new Signer(hex).publicKey}\n`);
  return 0;
}

process.exitCode = main();
