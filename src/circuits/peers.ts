/**
 * The peer network: a TCP listener, and reference-counted
 * peers identified by (remote token, local token), with endpoints taken from circuit
 * members. A referenced peer is dialled and kept connected: heartbeats on every
 * connection, re-dial with exponential backoff, sends to a disconnected peer queued and
 * flushed on reconnect (dropped after a while), and one connection per peer pair when both
 * sides dial each other (the one dialled by the greater local token survives, as upstream).
 */
import { createServer, connect, type Server } from 'node:net';
import type { Bind } from '../config.js';
import { log } from '../log.js';
import { Connection, type LocalIdentity, type Token } from './connection.js';
import { NetworkType } from '../proto/circuits.js';

export interface NetworkOptions {
  bind: Bind;
  me: LocalIdentity;
  heartbeatMs: number;
  retryMs: number;
  retryMaxMs: number;
  handshakeMs: number;
  /** Messages for a disconnected peer are dropped after this long. */
  queueTtlMs: number;
  maxFrame: number;
}

export interface NetworkListener {
  connected(remote: Token, local: Token): void;
  disconnected(remote: Token, local: Token): void;
  message(remote: Token, local: Token, type: number, payload: Buffer): void;
}

interface Queued {
  type: number;
  payload: Uint8Array;
  at: number;
}

interface Peer {
  remote: Token;
  local: Token;
  endpoints: string[];
  refs: number;
  conn: Connection | null;
  dialing: Connection | null;
  delay: number;
  next: number;
  timer: NodeJS.Timeout | null;
  queue: Queued[];
}

const keyOf = (remote: Token, local: Token): string => `${remote}|${local}`;

/** `tcp://host:port` or `host:port` → where to dial; other schemes are not supported here. */
export function parseEndpoint(e: string): { host: string; port: number } | null {
  const m = /^(?:tcp:\/\/)?\[?([^\]/]+?)\]?:(\d{1,5})$/.exec(e);
  if (!m || Number(m[2]) > 65535 || Number(m[2]) === 0) return null;
  return { host: m[1]!, port: Number(m[2]) };
}

export class PeerNetwork {
  readonly #o: NetworkOptions;
  readonly #peers = new Map<string, Peer>();
  /** Authorized inbound connections no peer reference asked for (yet). */
  readonly #loose = new Map<string, Connection>();
  readonly #all = new Set<Connection>();
  #listener: NetworkListener | null = null;
  #server: Server | null = null;
  #heartbeat: NodeJS.Timeout | null = null;
  #closed = false;

  constructor(o: NetworkOptions) {
    this.#o = o;
  }

  setListener(l: NetworkListener): void {
    this.#listener = l;
  }

  listen(): Promise<number> {
    const server = createServer((socket) => {
      if (this.#closed) return void socket.destroy();
      this.#track(
        new Connection(socket, {
          me: this.#o.me,
          expected: null,
          local: null,
          events: this.#events,
          handshakeMs: this.#o.handshakeMs,
          maxFrame: this.#o.maxFrame,
        }),
      );
    });
    this.#server = server;
    this.#heartbeat = setInterval(() => this.#beat(), this.#o.heartbeatMs);
    this.#heartbeat.unref();
    return new Promise((resolve, reject) => {
      server.once('error', (err: NodeJS.ErrnoException) =>
        reject(new Error(`network: cannot listen on ${this.#o.bind.host}:${this.#o.bind.port} (${err.code ?? err.message})`)),
      );
      server.listen({ host: this.#o.bind.host, port: this.#o.bind.port, exclusive: true }, () => {
        server.on('error', (err) => log.warn(`peer network listener: ${err.message}`));
        const a = server.address();
        resolve(typeof a === 'object' && a ? a.port : this.#o.bind.port);
      });
    });
  }

  /** Keeps a connection to `remote` while the returned release function is not called. */
  addRef(remote: Token, endpoints: string[], local: Token): () => void {
    const key = keyOf(remote, local);
    let p = this.#peers.get(key);
    if (!p) {
      p = { remote, local, endpoints, refs: 0, conn: null, dialing: null, delay: this.#o.retryMs, next: 0, timer: null, queue: [] };
      this.#peers.set(key, p);
      const loose = this.#loose.get(key);
      if (loose && !loose.closed) {
        this.#loose.delete(key);
        p.conn = loose;
      } else {
        this.#dial(p);
      }
    } else if (endpoints.length > 0) {
      p.endpoints = endpoints;
    }
    p.refs++;
    let released = false;
    const peer = p;
    return () => {
      if (released) return;
      released = true;
      peer.refs--;
      if (peer.refs > 0 || this.#peers.get(key) !== peer) return;
      this.#peers.delete(key);
      if (peer.timer) clearTimeout(peer.timer);
      peer.dialing?.close('no circuit or proposal needs this peer any more', false);
      peer.conn?.close('no circuit or proposal needs this peer any more', true, true);
    };
  }

  isConnected(remote: Token, local: Token): boolean {
    const c = this.#connOf(keyOf(remote, local));
    return c !== null;
  }

  /** Sends a circuit-layer message (NetworkMessage type CIRCUIT); queued while the peer is away. */
  send(remote: Token, local: Token, payload: Uint8Array): void {
    const key = keyOf(remote, local);
    const c = this.#connOf(key);
    if (c?.send(NetworkType.CIRCUIT, payload)) return;
    const p = this.#peers.get(key);
    if (!p) {
      log.warn(`peer network: dropped a message for ${remote}: no connection and no circuit refers to it`);
      return;
    }
    p.queue.push({ type: NetworkType.CIRCUIT, payload, at: Date.now() });
    if (!p.dialing && !p.conn && p.timer === null) this.#dial(p);
  }

  async close(): Promise<void> {
    this.#closed = true;
    if (this.#heartbeat) clearInterval(this.#heartbeat);
    for (const p of this.#peers.values()) if (p.timer) clearTimeout(p.timer);
    for (const c of [...this.#all]) c.close('node stopping', false);
    await new Promise<void>((r) => (this.#server ? this.#server.close(() => r()) : r()));
  }

  #connOf(key: string): Connection | null {
    const p = this.#peers.get(key);
    const c = p?.conn ?? this.#loose.get(key) ?? null;
    return c && !c.closed && c.authorized ? c : null;
  }

  #track(c: Connection): Connection {
    this.#all.add(c);
    return c;
  }

  #dial(p: Peer): void {
    // A retry timer that fired is spent, dial or not: one left set (the peer had dialled in
    // meanwhile) kept #retry from ever dialling again once that connection dropped.
    p.timer = null;
    if (this.#closed || p.dialing || (p.conn && !p.conn.closed)) return;
    const targets = p.endpoints.map(parseEndpoint).filter((x): x is { host: string; port: number } => x !== null);
    if (targets.length === 0) {
      log.warn(`peer network: no usable tcp endpoint for ${p.remote} (${p.endpoints.join(', ') || 'none'})`);
      return;
    }
    const t = targets[p.next++ % targets.length]!;
    const socket = connect({ host: t.host, port: t.port });
    p.dialing = this.#track(
      new Connection(socket, {
        me: this.#o.me,
        expected: p.remote,
        local: p.local,
        events: this.#events,
        handshakeMs: this.#o.handshakeMs,
        maxFrame: this.#o.maxFrame,
      }),
    );
  }

  #retry(p: Peer): void {
    if (this.#closed || this.#peers.get(keyOf(p.remote, p.local)) !== p || p.timer || p.dialing || p.conn) return;
    const delay = p.delay;
    p.delay = Math.min(p.delay * 2, this.#o.retryMaxMs);
    p.timer = setTimeout(() => this.#dial(p), delay);
    p.timer.unref();
  }

  #beat(): void {
    const now = Date.now();
    for (const c of this.#all) if (c.authorized && !c.closed) c.send(NetworkType.HEARTBEAT, new Uint8Array(0));
    for (const p of this.#peers.values()) {
      const before = p.queue.length;
      p.queue = p.queue.filter((q) => now - q.at < this.#o.queueTtlMs);
      if (p.queue.length < before)
        log.warn(`peer network: dropped ${before - p.queue.length} message(s) for ${p.remote}: not reconnected in ${this.#o.queueTtlMs} ms`);
    }
  }

  readonly #events = {
    authorized: (c: Connection): void => {
      const key = keyOf(c.remote!, c.local!);
      const p = this.#peers.get(key);
      if (p && p.dialing === c) p.dialing = null;
      const existing = p ? p.conn : this.#loose.get(key);
      const live = existing !== null && existing !== undefined && !existing.closed && existing !== c;
      if (live) {
        // Both sides dialled: keep the connection dialled by the node with the greater token.
        const keepNew = c.outbound ? c.local! > c.remote! : !(c.local! > c.remote!);
        if (!keepNew) {
          c.close('duplicate connection', false, true);
          return;
        }
      }
      if (p) p.conn = c;
      else this.#loose.set(key, c);
      if (live) existing.close('replaced by a duplicate connection', false, true);
      else log.info(`peer ${c.remote} connected (${c.outbound ? 'outbound' : 'inbound'}, as ${c.local})`);
      if (p) {
        p.delay = this.#o.retryMs;
        const queued = p.queue;
        p.queue = [];
        if (!live) this.#listener?.connected(c.remote!, c.local!);
        for (const q of queued) c.send(q.type, q.payload);
      } else if (!live) {
        this.#listener?.connected(c.remote!, c.local!);
      }
    },
    message: (c: Connection, type: number, payload: Buffer): void => {
      if (type === NetworkType.HEARTBEAT) return;
      if (type !== NetworkType.CIRCUIT) {
        log.debug(`peer network: ignored message type ${type} from ${c.remote}`);
        return;
      }
      this.#listener?.message(c.remote!, c.local!, type, payload);
    },
    closed: (c: Connection): void => {
      this.#all.delete(c);
      if (this.#closed) return;
      if (c.remote === null || c.local === null) {
        for (const p of this.#peers.values()) {
          if (p.dialing === c) {
            p.dialing = null;
            this.#retry(p);
          }
        }
        return;
      }
      const key = keyOf(c.remote, c.local);
      if (this.#loose.get(key) === c) {
        this.#loose.delete(key);
        this.#listener?.disconnected(c.remote, c.local);
      }
      const p = this.#peers.get(key);
      if (!p) return;
      if (p.dialing === c) p.dialing = null;
      if (p.conn === c) {
        p.conn = null;
        log.info(`peer ${c.remote} disconnected`);
        this.#listener?.disconnected(c.remote, c.local);
      }
      this.#retry(p);
    },
  };
}
