/**
 * A tiny stand-in for a Sawtooth REST API, for the load generator's tests: it answers
 * GET /blocks, accepts every POST /batches (after an optional delay, one at a time, or with a
 * first 429 and Retry-After) and reports every asked batch id with a chosen status. It
 * records when each submit arrived and how long it was held.
 */
import http from 'node:http';
import type { AddressInfo } from 'node:net';

export interface FakeOptions {
  /** ms each POST /batches is held before its answer; requests are served one at a time. */
  submitDelayMs?: number;
  /** Answer the first POST /batches with 429 and this Retry-After (seconds). */
  first429RetryAfter?: number;
  /** Status every batch id gets from /batch_statuses. */
  status?: 'COMMITTED' | 'INVALID';
  /** Answer every POST /batches with 429, without Retry-After. */
  always429?: boolean;
  /** Answer /batch_statuses with 500. */
  statusFails?: boolean;
  /** Serve an HTML page for everything (not a Sawtooth API). */
  notSawtooth?: boolean;
}

export interface FakeLedger {
  url: string;
  /** performance.now() of each POST /batches arrival, and its 202/429 answer. */
  submits: Array<{ at: number; status: number }>;
  /** ms between the start and the end of handling each submit (queueing inside the server included). */
  held: number[];
  close(): Promise<void>;
}

export async function startFakeLedger(o: FakeOptions = {}): Promise<FakeLedger> {
  const submits: FakeLedger['submits'] = [];
  const held: number[] = [];
  let chain: Promise<void> = Promise.resolve();
  let answered429 = false;
  const server = http.createServer((req, res) => {
    const chunks: Buffer[] = [];
    req.on('data', (c: Buffer) => chunks.push(c));
    req.on('end', () => {
      const json = (status: number, body: unknown, headers: Record<string, string> = {}): void => {
        res.writeHead(status, { 'content-type': 'application/json', ...headers });
        res.end(JSON.stringify(body));
      };
      if (o.notSawtooth) {
        res.writeHead(200, { 'content-type': 'text/html' });
        res.end('<html><body>hello</body></html>');
        return;
      }
      const path = (req.url ?? '').split('?')[0];
      if (req.method === 'GET' && path === '/blocks') return json(200, { data: [], head: '00', link: '' });
      if (req.method === 'POST' && path === '/batch_statuses') {
        if (o.statusFails) return json(500, { error: { code: 10, title: 'Unknown', message: 'broken' } });
        const ids = JSON.parse(Buffer.concat(chunks).toString()) as string[];
        return json(200, { data: ids.map((id) => ({ id, status: o.status ?? 'COMMITTED', invalid_transactions: [] })), link: '' });
      }
      if (req.method === 'POST' && path === '/batches') {
        const at = performance.now();
        if (o.always429) {
          submits.push({ at, status: 429 });
          return json(429, { error: { code: 31, title: 'Unable to Accept Batches', message: 'busy' } });
        }
        if (o.first429RetryAfter !== undefined && !answered429) {
          answered429 = true;
          submits.push({ at, status: 429 });
          return json(
            429,
            { error: { code: 31, title: 'Unable to Accept Batches', message: 'busy' } },
            { 'retry-after': String(o.first429RetryAfter) },
          );
        }
        submits.push({ at, status: 202 });
        chain = chain.then(async () => {
          if (o.submitDelayMs) await new Promise((r) => setTimeout(r, o.submitDelayMs));
          held.push(performance.now() - at);
          json(202, { link: 'http://x/batch_statuses?id=1' });
        });
        return;
      }
      json(404, { error: { code: 404, title: 'Not Found', message: 'no such path' } });
    });
  });
  await new Promise<void>((r) => server.listen(0, '127.0.0.1', r));
  return {
    url: `http://127.0.0.1:${(server.address() as AddressInfo).port}`,
    submits,
    held,
    close: () =>
      new Promise<void>((r) => {
        server.closeAllConnections();
        server.close(() => r());
      }),
  };
}
