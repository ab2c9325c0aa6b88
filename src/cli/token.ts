/**
 * Prints a Cylinder token (`Cylinder:<jwt>`) signed by the node's admin key
 * (<data dir>/keys/admin.priv; data dir from --data-dir or CAIRN_DATA_DIR, default ./data).
 * Use it as `Authorization: Bearer $(npm run -s token)`. With `--wait SECONDS` it waits
 * for a node that is still starting to write the key.
 */
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { loadConfig, ConfigError } from '../config.js';
import { Signer } from '../crypto/secp256k1.js';
import { makeCylinderJwt } from '../node-api/cylinder.js';
import { isMain, runCommand } from './args.js';

export const USAGE = `usage: cairn token [--data-dir DIR] [--wait SECONDS] [--json]
Prints a Cylinder token signed by <data dir>/keys/admin.priv, for
  curl -H "Authorization: Bearer $(npm run -s token)" ...
  --data-dir DIR   the node's data directory (default CAIRN_DATA_DIR or ./data)
  --wait SECONDS   wait up to this long for a starting node to write the key (default 0)
  --json           print the token as a JSON object ({"token": …})
Offline: the token is signed here with the key file, no node is asked.
`;

export async function run(args: string[]): Promise<number> {
  const json = args.includes('--json');
  const argv = args.filter((a) => a !== '--json');
  if (argv.includes('--help') || argv.includes('-h')) {
    process.stdout.write(USAGE);
    return 0;
  }
  let waitSec = 0;
  const w = argv.findIndex((a) => a === '--wait' || a.startsWith('--wait='));
  if (w >= 0) {
    const v = argv[w]!.includes('=') ? argv[w]!.slice('--wait='.length) : argv[w + 1];
    if (v === undefined || !/^\d+$/.test(v)) {
      process.stderr.write(`token: --wait takes whole seconds\n${USAGE}`);
      return 2;
    }
    waitSec = Number(v);
    argv.splice(w, argv[w]!.includes('=') ? 1 : 2);
  }
  let dataDir: string;
  try {
    const unknown = argv.filter((a) => a.startsWith('--') && !a.startsWith('--data-dir'));
    if (unknown.length > 0) throw new ConfigError(`unknown option ${unknown[0]}`);
    dataDir = loadConfig(argv).dataDir;
  } catch (err) {
    process.stderr.write(`token: ${err instanceof ConfigError ? err.message : String(err)}\n${USAGE}`);
    return 2;
  }
  const file = join(dataDir, 'keys', 'admin.priv');
  const until = Date.now() + waitSec * 1000;
  for (;;) {
    try {
      const signer = new Signer(readFileSync(file, 'utf8').trim());
      const token = `Cylinder:${makeCylinderJwt(signer)}`;
      process.stdout.write(json ? `${JSON.stringify({ token })}\n` : `${token}\n`);
      return 0;
    } catch (err) {
      const code = (err as NodeJS.ErrnoException).code;
      if (code === 'ENOENT' && Date.now() < until) {
        await new Promise((r) => setTimeout(r, 100));
        continue;
      }
      process.stderr.write(
        code === 'ENOENT'
          ? `token: ${file} does not exist; start the node once with this data directory first${waitSec ? ` (waited ${waitSec} s)` : ' (or pass --wait SECONDS)'}\n`
          : `token: cannot use ${file}: ${code ?? 'not a valid secp256k1 private key'}\n`,
      );
      return 1;
    }
  }
}

if (isMain(import.meta.url)) void runCommand('token', USAGE, () => run(process.argv.slice(2)));
