/**
 * A read of every record of ledger.mdb, in a child process, before the node opens it.
 *
 * Every record carries a checksum (checksum.ts), so a damaged value is refused when read;
 * but a bit flip in LMDB's own page structure (a node offset, a key size, a child page
 * number) can make the storage library read out of bounds and die by a signal, at start or
 * on the first read that reaches the page. Reading everything once in a throw-away process
 * turns that into a refusal to start that names the file, instead of a node that crashes
 * (and, under a supervisor, crashes again) on its first unlucky request.
 */
import { spawn } from 'node:child_process';
import { fileURLToPath } from 'node:url';

const fromSource = import.meta.url.endsWith('.ts');
/** The child's entry (plain JavaScript, not built: the same file from the sources and from dist/). */
const entry = fileURLToPath(new URL(`${fromSource ? '../..' : '../../..'}/workers/scan-ledger.mjs`, import.meta.url));

/**
 * Runs the scan of each of `paths` in a child process. Resolves null when it ended by itself (an
 * error it met is the normal start's to report), or the signal that killed it.
 */
export function scanInChild(paths: string[], timeoutMs = 600_000, script = entry): Promise<NodeJS.Signals | null> {
  // Nothing inherited: no NODE_OPTIONS loaders (a test runner's), no coverage recording.
  const env = { PATH: process.env.PATH ?? '' };
  const args = [script, ...paths];
  return new Promise((resolve) => {
    const child = spawn(process.execPath, args, { env, stdio: 'ignore' });
    const timer = setTimeout(() => child.kill('SIGKILL'), timeoutMs);
    timer.unref();
    child.once('error', () => {
      clearTimeout(timer);
      resolve(null);
    });
    child.once('exit', (_code, signal) => {
      clearTimeout(timer);
      resolve(signal === 'SIGKILL' ? null : signal);
    });
  });
}
