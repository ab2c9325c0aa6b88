/**
 * Prints a Cylinder token (`Cylinder:<jwt>`) signed by the node's admin key
 * (<data dir>/keys/admin.priv; data dir from --data-dir or CAIRN_DATA_DIR, default ./data).
 * Use it as `Authorization: Bearer $(npm run -s token)`.
 */
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { loadConfig, ConfigError } from '../config.js';
import { Signer } from '../crypto/secp256k1.js';
import { makeCylinderJwt } from '../node-api/cylinder.js';

function main(): number {
  let dataDir: string;
  try {
    dataDir = loadConfig().dataDir;
  } catch (err) {
    process.stderr.write(`token: ${err instanceof ConfigError ? err.message : String(err)}\n`);
    return 2;
  }
  const file = join(dataDir, 'keys', 'admin.priv');
  let signer: Signer;
  try {
    signer = new Signer(readFileSync(file, 'utf8').trim());
  } catch (err) {
    const code = (err as NodeJS.ErrnoException).code;
    process.stderr.write(
      code === 'ENOENT'
        ? `token: ${file} does not exist; start the node once with this data directory first\n`
        : `token: cannot use ${file}: ${code ?? 'not a valid secp256k1 private key'}\n`,
    );
    return 1;
  }
  process.stdout.write(`Cylinder:${makeCylinderJwt(signer)}\n`);
  return 0;
}

process.exitCode = main();
