/**
 * Prints a Cylinder token (`Cylinder:<jwt>`) signed by the node's admin key
 * (<data dir>/keys/admin.priv; data dir from --data-dir or CAIRN_DATA_DIR, default ./data).
 * Use it as `Authorization: Bearer $(npm run -s token)`. With `--wait SECONDS` it waits
 * for a node that is still starting to write the key.
 */
import { readFileSync } from 'node:fs';
import { join, resolve } from 'node:path';
import { Signer } from '../crypto/secp256k1.js';
import { makeCylinderJwt } from '../auth/cylinder.js';
import { fsReason, InputError, isMain, jsonRequested, Output, parseOrUsage, runCommand, seconds, UsageError } from './args.js';

export const USAGE = `usage: cairn token [--data-dir DIR] [--wait SECONDS] [--json] [--quiet]
Prints a Cylinder admin token for the node API, signed by <data dir>/keys/admin.priv, for
  curl -H "Authorization: Bearer $(npm run -s token)" ...
  --data-dir DIR   the node's data directory (default CAIRN_DATA_DIR or ./data)
  --wait SECONDS   wait up to this long for a starting node to write the key (default 0)
  --json           print the token as a JSON object ({"token": …})
Offline: the token is signed here with the key file, no node is asked.
exit status: 0 printed, 2 usage or input error (the key file is missing or unreadable)
`;

export async function run(argv: string[]): Promise<number> {
  const args = parseOrUsage(argv, ['data-dir', 'wait']);
  if (args.help) {
    process.stdout.write(USAGE);
    return 0;
  }
  if (args.positional.length > 0) throw new UsageError(`unexpected argument ${args.positional[0]}`);
  const waitSec = seconds(args.options.get('wait'), 'wait', 0);
  const dataDir = resolve(args.options.get('data-dir') ?? (process.env.CAIRN_DATA_DIR || './data'));
  const file = join(dataDir, 'keys', 'admin.priv');
  const until = Date.now() + waitSec * 1000;
  for (;;) {
    let hex: string;
    try {
      hex = readFileSync(file, 'utf8').trim();
    } catch (err) {
      const code = (err as NodeJS.ErrnoException).code;
      if (code === 'ENOENT' && Date.now() < until) {
        await new Promise((r) => setTimeout(r, 100));
        continue;
      }
      throw new InputError(
        code === 'ENOENT'
          ? `${file} does not exist: name the node's data directory with --data-dir, or start the node once with it first${waitSec ? ` (waited ${waitSec} s)` : ' (--wait SECONDS waits for a starting node)'}`
          : `--data-dir: cannot read ${file}: ${fsReason(err)}`,
      );
    }
    let signer: Signer;
    try {
      signer = new Signer(hex);
    } catch {
      throw new InputError(`--data-dir: ${file} does not hold a secp256k1 private key`);
    }
    const token = `Cylinder:${makeCylinderJwt(signer)}`;
    new Output(args).result({ token }, token);
    return 0;
  }
}

if (isMain(import.meta.url)) void runCommand('cairn token', USAGE, () => run(process.argv.slice(2)), jsonRequested(process.argv));
