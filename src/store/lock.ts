/**
 * One process per data directory. LMDB lets several processes open the same files, so a
 * second node started on the directory would write blocks too and fork the chain inside
 * one file. The lock must vanish when its holder dies, even by kill -9, without leaving a
 * stale file that needs a guess about pid reuse:
 *
 * - on Linux it is a listening socket in the abstract namespace, named after the
 *   directory's device and inode (so two paths to one directory share it). Binding is
 *   atomic and the kernel drops the name with the process. A second process that fails to
 *   bind connects and is told the holder's pid.
 * - elsewhere it is `cairn.pid` created with O_EXCL; a file whose pid is not alive is stale
 *   and taken over.
 *
 * Either way `cairn.pid` holds the holder's pid, for operators.
 */
import net from 'node:net';
import { closeSync, openSync, readFileSync, rmSync, statSync, writeFileSync, writeSync } from 'node:fs';
import { join } from 'node:path';

/** A start-up refusal with a message meant for the operator (printed without a stack). */
export class StartupError extends Error {
  override name = 'StartupError';
  constructor(
    message: string,
    /** Process exit code: 2 when another process holds the directory, 1 otherwise. */
    readonly exitCode = 1,
  ) {
    super(message);
  }
}

export interface DataDirLock {
  release(): Promise<void>;
}

const PID_FILE = 'cairn.pid';

function lockedError(dir: string, pid: string | null): StartupError {
  return new StartupError(
    `data directory ${dir} is in use by another process${pid ? ` (pid ${pid})` : ''}: ` +
      'stop that node first; two processes on one data directory would fork the chain',
    2,
  );
}

/** Asks the holder of an abstract lock socket for its pid (null if it does not answer). */
function askHolder(name: string): Promise<string | null> {
  return new Promise((resolve) => {
    let got = '';
    const s = net.connect({ path: name });
    const done = (v: string | null): void => {
      clearTimeout(timer);
      s.destroy();
      resolve(v);
    };
    const timer = setTimeout(() => done(null), 2000);
    s.on('data', (d: Buffer) => (got += d.toString()));
    s.on('end', () => done(/^\d+$/.test(got) ? got : null));
    s.on('error', () => done(null));
  });
}

async function lockLinux(dir: string): Promise<DataDirLock> {
  const st = statSync(dir);
  const name = `\0cairn-data-dir-${st.dev}-${st.ino}`;
  const server = net.createServer((c) => c.end(String(process.pid)));
  const bound = await new Promise<boolean>((resolve, reject) => {
    server.once('error', (err: NodeJS.ErrnoException) => (err.code === 'EADDRINUSE' ? resolve(false) : reject(err)));
    server.listen({ path: name }, () => resolve(true));
  });
  if (!bound) throw lockedError(dir, await askHolder(name));
  // The lock must not keep the process alive on its own.
  server.unref();
  writeFileSync(join(dir, PID_FILE), `${process.pid}\n`);
  return {
    release: () =>
      new Promise<void>((resolve) => {
        rmSync(join(dir, PID_FILE), { force: true });
        server.close(() => resolve());
      }),
  };
}

function alive(pid: number): boolean {
  try {
    process.kill(pid, 0);
    return true;
  } catch (err) {
    return (err as NodeJS.ErrnoException).code === 'EPERM';
  }
}

function lockPidFile(dir: string): DataDirLock {
  const file = join(dir, PID_FILE);
  for (let attempt = 0; attempt < 2; attempt++) {
    try {
      const fd = openSync(file, 'wx', 0o600);
      writeSync(fd, `${process.pid}\n`);
      closeSync(fd);
      return { release: async () => rmSync(file, { force: true }) };
    } catch (err) {
      if ((err as NodeJS.ErrnoException).code !== 'EEXIST') throw err;
    }
    let text = '';
    try {
      text = readFileSync(file, 'utf8').trim();
    } catch {
      // removed meanwhile: try again
    }
    const pid = Number(text);
    if (Number.isInteger(pid) && pid > 0 && pid !== process.pid && alive(pid)) throw lockedError(dir, String(pid));
    rmSync(file, { force: true }); // stale: its holder is gone
  }
  throw lockedError(dir, null);
}

/** Takes the data directory's lock or throws a StartupError (exit code 2) naming the holder. */
export async function lockDataDir(dir: string): Promise<DataDirLock> {
  return process.platform === 'linux' ? lockLinux(dir) : lockPidFile(dir);
}
