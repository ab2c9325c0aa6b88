/** A small keep-alive HTTP client for load generation (node:http, no per-request setup). */
import http from 'node:http';
import { received } from './raw.js';

export class Client {
  readonly agent: http.Agent;
  readonly host: string;
  readonly port: number;

  constructor(url: string, connections: number) {
    const u = new URL(url);
    this.host = u.hostname;
    this.port = Number(u.port);
    this.agent = new http.Agent({ keepAlive: true, maxSockets: connections, maxFreeSockets: connections });
  }

  request(method: string, path: string, body?: Uint8Array, contentType?: string): Promise<{ status: number; body: string }> {
    return new Promise((resolve, reject) => {
      const headers: Record<string, string | number> = {};
      if (body) {
        headers['content-type'] = contentType ?? 'application/octet-stream';
        headers['content-length'] = body.length;
      }
      const req = http.request({ host: this.host, port: this.port, method, path, agent: this.agent, headers }, (res) => {
        const chunks: Buffer[] = [];
        // The status line and header bytes as sent (HTTP/1.1 SSS Reason\r\n, name: value\r\n each, \r\n).
        received.bytes += 15 + (res.statusMessage?.length ?? 0) + 2;
        for (let i = 0; i < res.rawHeaders.length; i += 2)
          received.bytes += (res.rawHeaders[i]?.length ?? 0) + (res.rawHeaders[i + 1]?.length ?? 0) + 4;
        res.on('data', (c: Buffer) => {
          received.bytes += c.length;
          chunks.push(c);
        });
        res.on('end', () => resolve({ status: res.statusCode ?? 0, body: Buffer.concat(chunks).toString() }));
        res.on('error', reject);
      });
      req.on('error', reject);
      req.end(body);
    });
  }

  close(): void {
    this.agent.destroy();
  }
}

export function percentile(sorted: number[], p: number): number {
  if (sorted.length === 0) return 0;
  return sorted[Math.min(sorted.length - 1, Math.floor((p / 100) * sorted.length))]!;
}
