/** Raw HTTP over node:net: for requests no HTTP client would send (slow oversized bodies, huge heads). */
import net from 'node:net';

export interface RawResult {
  /** Everything the server sent, as latin1 text. */
  text: string;
  /** The status code of the first response line, or 0 when none came. */
  status: number;
  /** The socket error, if the connection failed (e.g. ECONNRESET). */
  error: string | undefined;
}

/**
 * Writes `head`, then each of `chunks` `delayMs` apart (stopping when the server closes),
 * and collects the answer until the server closes or `timeoutMs` passes.
 */
export function rawRequest(port: number, head: string | Buffer, chunks: Buffer[] = [], delayMs = 2, timeoutMs = 15000): Promise<RawResult> {
  return new Promise((resolve) => {
    const s = net.connect(port, '127.0.0.1');
    let text = '';
    let error: string | undefined;
    let closed = false;
    const finish = (): void => {
      if (closed) return;
      closed = true;
      clearTimeout(timer);
      s.destroy();
      const m = /^HTTP\/1\.1 (\d{3})/.exec(text);
      resolve({ text, status: m ? Number(m[1]) : 0, error });
    };
    const timer = setTimeout(finish, timeoutMs);
    s.on('data', (d) => {
      text += d.toString('latin1');
      if (complete(text)) finish();
    });
    s.on('error', (e: NodeJS.ErrnoException) => {
      error = e.code ?? e.message;
      finish();
    });
    s.on('close', finish);
    s.write(head);
    void (async () => {
      for (const c of chunks) {
        if (closed || s.destroyed || !s.writable) return;
        s.write(c);
        await new Promise((r) => setTimeout(r, delayMs));
      }
    })();
  });
}

/** True once `text` holds a whole response with a Content-Length. */
function complete(text: string): boolean {
  const end = text.indexOf('\r\n\r\n');
  if (end < 0) return false;
  const m = /\r\ncontent-length: *(\d+)/i.exec(text.slice(0, end));
  return m !== null && text.length - end - 4 >= Number(m[1]);
}

/** `total` bytes as HTTP/1.1 chunks of `size` bytes, then the last chunk. */
export function chunked(total: number, size: number): Buffer[] {
  const out: Buffer[] = [];
  for (let sent = 0; sent < total; sent += size) {
    const n = Math.min(size, total - sent);
    out.push(Buffer.concat([Buffer.from(`${n.toString(16)}\r\n`), Buffer.alloc(n, 0x61), Buffer.from('\r\n')]));
  }
  out.push(Buffer.from('0\r\n\r\n'));
  return out;
}

/** The JSON body of a raw response, or undefined. */
export function rawJson(r: RawResult): any {
  const i = r.text.indexOf('\r\n\r\n');
  if (i < 0) return undefined;
  try {
    return JSON.parse(r.text.slice(i + 4));
  } catch {
    return undefined;
  }
}
