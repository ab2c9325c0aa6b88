/** A small keep-alive HTTP client for load generation (node:http, no per-request setup). */
import http from 'node:http';

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
        res.on('data', (c: Buffer) => chunks.push(c));
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
