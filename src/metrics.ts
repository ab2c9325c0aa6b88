/**
 * Prometheus metrics (`--metrics` / CAIRN_METRICS): GET /metrics in the text format, on the
 * ledger gateway's port or on a listener of its own.
 *
 * Nothing here exists while metrics are off: the ingest and the HTTP servers get no hooks
 * (their calls are optional and skipped), no timers run, nothing is observed. When on,
 * counters move where the work happens (ingest, block events); gauges that mirror state
 * (head, pending pool, queue limit, verify pool, LMDB sizes) are read only at scrape time.
 */
import { createServer, type Server } from 'node:http';
import { statSync } from 'node:fs';
import { join } from 'node:path';
import type { RootDatabase } from 'lmdb';
import { Counter, Gauge, Histogram, Registry, collectDefaultMetrics } from 'prom-client';
import type { Bind } from './config.js';
import type { HttpServer } from './http/server.js';
import type { Ledger } from './ledger/ledger.js';
import type { IngestMetrics } from './ledger/ingest.js';

const SECONDS = [0.0005, 0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30];
/** Finer around the latency targets (a submit's 10–15 ms, a commit's 100 ms). */
const STAGE_SECONDS = [0.0005, 0.001, 0.002, 0.005, 0.01, 0.015, 0.025, 0.05, 0.075, 0.1, 0.15, 0.25, 0.5, 1, 2.5, 5, 10];
const COUNTS = [0, 1, 2, 5, 10, 25, 50, 100, 250, 500, 1000, 2500, 5000];
/** Acknowledged batches whose acknowledgement time is kept for the commit histogram (the oldest go first past it). */
const ACK_TRACKED = 65_536;

export class NodeMetrics {
  readonly registry = new Registry();
  readonly #received: Counter;
  readonly #accepted: Counter;
  readonly #rejected: Counter<'reason'>;
  readonly #committed: Counter;
  readonly #invalid: Counter;
  readonly #blocks: Counter;
  readonly #buildTime: Histogram;
  readonly #http: Histogram<'interface' | 'method' | 'route' | 'status'>;
  readonly #stage: Histogram<'stage'>;
  readonly #commitLatency: Histogram;
  readonly #settle: Histogram;
  readonly #woken: Histogram;
  /** Acknowledgement time (performance.now()) of batches not settled yet. */
  readonly #ackedAt = new Map<string, number>();
  #listener: Server | null = null;

  constructor(version: string) {
    const registers = [this.registry];
    collectDefaultMetrics({ register: this.registry, prefix: 'cairn_' });
    new Gauge({ name: 'cairn_info', help: 'The running version (always 1)', labelNames: ['version'], registers }).set({ version }, 1);
    this.#received = new Counter({
      name: 'cairn_batches_received_total',
      help: 'Batches in POST /batches bodies that reached the ledger',
      registers,
    });
    this.#accepted = new Counter({
      name: 'cairn_batches_accepted_total',
      help: 'Batches acknowledged (202): durable in the pending pool',
      registers,
    });
    this.#rejected = new Counter({
      name: 'cairn_batches_rejected_total',
      help: 'Batches refused at submission, by reason (QUEUE_FULL, INVALID, UNDECODABLE, EMPTY, UNAVAILABLE)',
      labelNames: ['reason'],
      registers,
    });
    this.#committed = new Counter({ name: 'cairn_batches_committed_total', help: 'Batches committed in a block', registers });
    this.#invalid = new Counter({ name: 'cairn_batches_invalid_total', help: 'Acknowledged batches settled INVALID', registers });
    this.#blocks = new Counter({ name: 'cairn_blocks_committed_total', help: 'Blocks committed since start', registers });
    this.#buildTime = new Histogram({
      name: 'cairn_block_build_seconds',
      help: 'Time to build a block (execute, Merkle update, sign) in the committer thread',
      buckets: SECONDS,
      registers,
    });
    this.#http = new Histogram({
      name: 'cairn_http_request_duration_seconds',
      help: 'HTTP request duration by interface, method, route pattern and status',
      labelNames: ['interface', 'method', 'route', 'status'],
      buckets: SECONDS,
      registers,
    });
    this.#stage = new Histogram({
      name: 'cairn_submit_stage_seconds',
      help: 'POST /batches by stage: verify (arrival to verdict: the queue in front of the verify pool and the verify), durable (verdict to durable in the pending pool: its group write)',
      labelNames: ['stage'],
      buckets: STAGE_SECONDS,
      registers,
    });
    this.#commitLatency = new Histogram({
      name: 'cairn_batch_commit_seconds',
      help: 'Acknowledged (202) to committed in a block, as the HTTP thread sees it: waiting for a block, building it, writing it, and the news reaching this thread',
      buckets: STAGE_SECONDS,
      registers,
    });
    this.#settle = new Histogram({
      name: 'cairn_block_settle_seconds',
      help: "The HTTP thread's work per block: settling its batches in the pending pool and waking the status waits",
      buckets: STAGE_SECONDS,
      registers,
    });
    this.#woken = new Histogram({
      name: 'cairn_block_status_waits_woken',
      help: 'Status waits (wait= on the batch status routes, data API submissions) woken per block',
      buckets: COUNTS,
      registers,
    });
  }

  /** The ingest's hooks (POST /batches). */
  readonly ingest: IngestMetrics = {
    received: (n) => this.#received.inc(n),
    accepted: (ids) => {
      this.#accepted.inc(ids.length);
      const now = performance.now();
      for (const id of ids) this.#ackedAt.set(id, now);
      for (const id of this.#ackedAt.keys()) {
        if (this.#ackedAt.size <= ACK_TRACKED) break;
        this.#ackedAt.delete(id);
      }
    },
    stage: (stage, seconds) => this.#stage.observe({ stage }, seconds),
    rejected: (reason, n) => this.#rejected.inc({ reason }, n),
    rejectedOnArrival: (reason, n) => {
      this.#received.inc(n);
      this.#rejected.inc({ reason }, n);
    },
  };

  /** The HTTP server hook of one interface (ServerOptions.observe). */
  http(name: string): (method: string, route: string, status: number, seconds: number) => void {
    return (method, route, status, seconds) => this.#http.observe({ interface: name, method, route, status: String(status) }, seconds);
  }

  /** Block events and the gauges read from the ledger and its files at scrape time. */
  attach(ledger: Ledger, db: RootDatabase, dataDir: string): void {
    ledger.onBlock((e) => {
      this.#committed.inc(e.committed.length);
      this.#invalid.inc(e.invalid.length);
      const now = performance.now();
      for (const id of e.committed) {
        const at = this.#ackedAt.get(id);
        if (at === undefined) continue;
        this.#ackedAt.delete(id);
        this.#commitLatency.observe((now - at) / 1000);
      }
      for (const id of e.invalid) this.#ackedAt.delete(id);
      this.#settle.observe(ledger.lastSettle.seconds);
      this.#woken.observe(ledger.lastSettle.woken);
      if (e.head) {
        this.#blocks.inc();
        if (e.buildMs !== undefined) this.#buildTime.observe(e.buildMs / 1000);
      }
    });
    const registers = [this.registry];
    new Gauge({
      name: 'cairn_block_height',
      help: 'Block number of the chain head',
      registers,
      collect() {
        this.set(ledger.head.blockNum);
      },
    });
    new Gauge({
      name: 'cairn_pending_batches',
      help: 'Acknowledged batches not settled yet (pending-pool depth)',
      registers,
      collect() {
        this.set(ledger.pendingCount);
      },
    });
    new Gauge({
      name: 'cairn_queue_limit_batches',
      help: 'Back-pressure limit: pending batches over it are refused (429)',
      registers,
      collect() {
        this.set(ledger.queueLimit);
      },
    });
    new Gauge({
      name: 'cairn_verify_pool_utilization',
      help: 'Share of the verify pool threads busy since start (piscina utilization, 0..1)',
      registers,
      collect() {
        this.set(ledger.verifyUtilization);
      },
    });
    new Gauge({
      name: 'cairn_alarm',
      help: 'Storage alarms raised (1) by kind and cause: writes are refused while any is raised (src/store/alarms.ts)',
      labelNames: ['kind', 'cause'],
      registers,
      collect() {
        this.reset();
        for (const a of ledger.alarms.list()) this.set({ kind: a.kind, cause: a.cause }, 1);
      },
    });
    // Transaction processors that stopped answering (src/component/processors.ts). The report
    // carries totals since the committer started; the counters add what each report adds.
    const txnsSetAside = new Counter({
      name: 'cairn_transactions_set_aside_total',
      help: 'Transactions whose transaction processor did not answer within --processor-timeout (their batches wait)',
      registers,
    });
    const processorsSetAside = new Counter({
      name: 'cairn_processors_set_aside_total',
      help: 'Transaction processors set aside: a process request or its pings unanswered within --processor-timeout',
      registers,
    });
    let seen = { transactionsSetAside: 0, processorsSetAside: 0 };
    ledger.onProcessors((r) => {
      // A restarted committer's endpoint counts from zero (the ledger reports zeros first).
      txnsSetAside.inc(Math.max(0, r.transactionsSetAside - seen.transactionsSetAside));
      processorsSetAside.inc(Math.max(0, r.processorsSetAside - seen.processorsSetAside));
      seen = { transactionsSetAside: r.transactionsSetAside, processorsSetAside: r.processorsSetAside };
    });
    new Gauge({
      name: 'cairn_batches_set_aside',
      help: 'Pending batches that wait on a transaction processor (none serves their family, or it stopped answering)',
      registers,
      collect() {
        this.set(ledger.setAsideCount);
      },
    });
    const raised = new Counter({
      name: 'cairn_alarms_raised_total',
      help: 'Storage alarms raised since start, by kind',
      labelNames: ['kind'],
      registers,
    });
    ledger.alarms.onChange((up, a) => {
      if (up) raised.inc({ kind: a.kind });
    });
    new Gauge({
      name: 'cairn_lmdb_map_size_bytes',
      help: 'LMDB map size (the most the file may grow to) of the ledger environment',
      labelNames: ['file'],
      registers,
      collect() {
        this.set({ file: 'ledger.mdb' }, (db.getStats() as { mapSize: number }).mapSize);
      },
    });
    new Gauge({
      name: 'cairn_lmdb_file_size_bytes',
      help: 'Size on disk of the LMDB files in the data directory',
      labelNames: ['file'],
      registers,
      collect() {
        for (const file of ['ledger.mdb', 'pending.mdb']) {
          try {
            this.set({ file }, statSync(join(dataDir, file)).size);
          } catch {
            // not there (yet)
          }
        }
      },
    });
  }

  /** GET /metrics on an HTTP server of the node (the ledger gateway's). */
  route(server: HttpServer): void {
    server.route('get', '/metrics', async () => ({ status: 200, body: await this.registry.metrics(), contentType: this.registry.contentType }));
  }

  /** GET /metrics on a listener of its own; resolves with its port. */
  listen(bind: Bind): Promise<number> {
    const server = createServer((req, res) => {
      const path = (req.url ?? '/').split('?')[0];
      if (req.method !== 'GET' || path !== '/metrics') {
        res.writeHead(404, { 'content-type': 'application/json' }).end(JSON.stringify({ message: `No resource at ${path} (only GET /metrics)` }));
        return;
      }
      this.registry.metrics().then(
        (text) => res.writeHead(200, { 'content-type': this.registry.contentType }).end(text),
        (err: unknown) => res.writeHead(500, { 'content-type': 'application/json' }).end(JSON.stringify({ message: String(err) })),
      );
    });
    this.#listener = server;
    return new Promise((resolve, reject) => {
      server.once('error', (err: NodeJS.ErrnoException) =>
        reject(new Error(`metrics: cannot listen on ${bind.host}:${bind.port} (${err.code ?? err.message})`)),
      );
      server.listen({ host: bind.host, port: bind.port, exclusive: true }, () => resolve((server.address() as { port: number }).port));
    });
  }

  async close(): Promise<void> {
    const s = this.#listener;
    this.#listener = null;
    if (s) {
      const closed = new Promise<void>((resolve) => s.close(() => resolve()));
      s.closeAllConnections();
      await closed;
    }
    this.registry.clear();
  }
}
