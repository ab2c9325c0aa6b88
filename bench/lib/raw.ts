/**
 * A lean HTTP/1.1 load client for POST /batches: one keep-alive socket per connection,
 * request bytes built once per body, responses parsed just enough (status line,
 * Content-Length). It keeps the load generator's own CPU small on a machine it shares
 * with the node, as autocannon does.
 */
import net from 'node:net';

/** Bytes this process has received from nodes over HTTP (to tell a node's file writes from its socket writes). */
export const received = { bytes: 0 };

interface Pending {
  resolve(r: { status: number; body: string }): void;
  reject(e: Error): void;
}

export class RawConnection {
  readonly #socket: net.Socket;
  #buf: Buffer = Buffer.alloc(0);
  #pending: Pending | null = null;
  readonly #ready: Promise<void>;

  constructor(host: string, port: number) {
    this.#socket = net.connect({ host, port, noDelay: true });
    this.#ready = new Promise((resolve, reject) => {
      this.#socket.once('connect', () => resolve());
      this.#socket.once('error', reject);
    });
    this.#socket.on('data', (d: Buffer) => {
      received.bytes += d.length;
      this.#onData(d);
    });
    this.#socket.on('error', (e) => this.#pending?.reject(e));
    this.#socket.on('close', () => this.#pending?.reject(new Error('connection closed')));
  }

  static request(host: string, method: string, path: string, body?: Uint8Array, contentType = 'application/octet-stream'): Buffer {
    const head =
      `${method} ${path} HTTP/1.1\r\nHost: ${host}\r\nConnection: keep-alive\r\n` +
      (body ? `Content-Type: ${contentType}\r\nContent-Length: ${body.length}\r\n` : '') +
      '\r\n';
    return body ? Buffer.concat([Buffer.from(head), body]) : Buffer.from(head);
  }

  async send(request: Buffer): Promise<{ status: number; body: string }> {
    await this.#ready;
    return new Promise((resolve, reject) => {
      this.#pending = { resolve, reject };
      this.#socket.write(request);
    });
  }

  #onData(d: Buffer): void {
    this.#buf = this.#buf.length ? Buffer.concat([this.#buf, d]) : d;
    const end = this.#buf.indexOf('\r\n\r\n');
    if (end < 0) return;
    const head = this.#buf.subarray(0, end).toString('latin1');
    const m = /content-length:\s*(\d+)/i.exec(head);
    const len = m ? Number(m[1]) : 0;
    if (this.#buf.length < end + 4 + len) return;
    const status = Number(head.slice(9, 12));
    const body = this.#buf.subarray(end + 4, end + 4 + len).toString();
    this.#buf = this.#buf.subarray(end + 4 + len);
    const p = this.#pending;
    this.#pending = null;
    p?.resolve({ status, body });
  }

  close(): void {
    this.#socket.destroy();
  }
}
