/**
 * The node API's circuit operations: `/admin/proposals[/{id}]`, `/admin/circuits[/{id}]`,
 * `POST /admin/submit` and the websocket `/ws/admin/register/{type}`. Declared as node API
 * routes (Router.add: the node API's permissions, protocol versions and `{message}` errors),
 * in a file of their own.
 */
import type { HttpRequest, HttpResponse, us_socket_context_t, WebSocket } from '@trufflesuite/uws-js-unofficial';
import { ApiError } from '../http/api-error.js';
import type { HttpServer, Req } from '../http/server.js';
import { log } from '../log.js';
import { ANY_JSON } from '../http/route.js';
import { authorize, json, protocolVersion, type Router } from '../node-api/router.js';
import type { Authenticator } from '../auth/identity.js';
import type { Access } from '../auth/access.js';
import { pageOf, parsePageQuery } from '../node-api/paging.js';
import type { AdminService } from './admin-service.js';
import { circuitJson, eventJson, proposalJson, type Version } from './json.js';
import { CircuitProposal, Status, decode, type ProposalMsg } from '../proto/circuits.js';
import type { EventRecord } from './store.js';
import { ValidationError } from './validate.js';
import { circuitErrors } from './errors.js';

const STATUS_FILTER: Record<string, number> = { disbanded: Status.DISBANDED, abandoned: Status.ABANDONED };

export function registerAdminRoutes(r: Router, admin: AdminService): void {
  r.add({
    method: 'get',
    path: '/admin/proposals',
    permission: 'circuit.read',
    reply: ANY_JSON,
    query: (req) => ({ page: parsePageQuery(req.query), mgmt: req.query.get('management_type'), member: req.query.get('member') }),
    handler: ({ query: { page, mgmt, member }, version }) => {
      const items = admin.store
        .proposals()
        .filter((p) => mgmt === null || p.circuitProposal.circuitManagementType === mgmt)
        .filter((p) => member === null || p.circuitProposal.members.some((m) => m.nodeId === member))
        .map((p) => proposalJson(p, version));
      const filters = [
        mgmt !== null ? `management_type=${encodeURIComponent(mgmt)}` : '',
        member !== null ? `member=${encodeURIComponent(member)}` : '',
      ].filter(Boolean);
      const base = filters.length ? `/admin/proposals?${filters.join('&')}&` : '/admin/proposals?';
      return json(pageOf(items, base, page));
    },
  });

  r.add({
    method: 'get',
    path: '/admin/proposals/:circuit_id',
    permission: 'circuit.read',
    reply: ANY_JSON,
    handler: ({ params, version }) => {
      const p = admin.store.proposal(params.circuit_id);
      if (!p) throw circuitErrors.proposalNotFound({ id: params.circuit_id.slice(0, 64) });
      return json(proposalJson(p, version));
    },
  });

  r.add({
    method: 'get',
    path: '/admin/circuits',
    permission: 'circuit.read',
    reply: ANY_JSON,
    query: (req) => ({ page: parsePageQuery(req.query), filter: req.query.get('filter'), status: req.query.get('status') }),
    handler: ({ query: { page, filter, status }, version }) => {
      // Version 2 lists Active circuits unless a status is asked for; version 1 lists all.
      const want = status !== null ? (STATUS_FILTER[status.toLowerCase()] ?? Status.ACTIVE) : version === 2 ? Status.ACTIVE : null;
      const items = admin.store
        .circuits()
        .filter((c) => want === null || (c.circuitStatus || Status.ACTIVE) === want)
        .filter((c) => filter === null || c.members.some((m) => m.nodeId === filter))
        .sort((a, b) => (a.circuitId < b.circuitId ? 1 : a.circuitId > b.circuitId ? -1 : 0))
        .map((c) => circuitJson(c, version));
      const filters = [
        filter !== null ? `filter=${encodeURIComponent(filter)}` : '',
        status !== null ? `status=${encodeURIComponent(status)}` : '',
      ].filter(Boolean);
      const base = filters.length ? `/admin/circuits?${filters.join('&')}&` : '/admin/circuits?';
      return json(pageOf(items, base, page));
    },
  });

  r.add({
    method: 'get',
    path: '/admin/circuits/:circuit_id',
    permission: 'circuit.read',
    reply: ANY_JSON,
    handler: ({ params, version }) => {
      const c = admin.store.circuit(params.circuit_id);
      if (!c) throw circuitErrors.circuitNotFound({ id: params.circuit_id.slice(0, 64) });
      return json(circuitJson(c, version));
    },
  });

  r.add({
    method: 'post',
    path: '/admin/submit',
    permission: 'circuit.write',
    reply: ANY_JSON,
    body: submitBody,
    handler: async ({ body }) => {
      try {
        await admin.submit(body);
      } catch (err) {
        if (err instanceof ValidationError) {
          const m = err.message.startsWith('Failed to parse payload') ? err.message : `Unable to handle message: validation failed: ${err.message}`;
          log.info(`circuits: payload refused: ${m}`);
          throw circuitErrors.payloadRefused({ reason: m });
        }
        throw err;
      }
      return { status: 202, body: '' };
    },
  });
}

/** The body of `POST /admin/submit`: the CircuitManagementPayload bytes, not empty. */
function submitBody(req: Req): Buffer {
  if (req.body.length === 0) throw circuitErrors.emptyPayload();
  return req.body;
}

interface SocketState {
  type: string;
  version: Version;
  last: number;
  /** Greatest event sequence number sent on this socket. */
  seq: number;
}
type Socket = WebSocket<SocketState>;

/**
 * `/ws/admin/register/{type}?last=<ms>`: the registration result, then every stored event of
 * that type stamped after `last`, then live events; none dropped, none repeated (each
 * socket remembers the last event number it was sent).
 */
export class AdminEvents {
  readonly #admin: AdminService;
  readonly #sockets = new Set<Socket>();
  readonly #off: () => void;

  constructor(server: HttpServer, admin: AdminService, authn: Authenticator, access: Access) {
    this.#admin = admin;
    server.ws<SocketState>('/ws/admin/register/:type', {
      maxPayloadLength: 16 * 1024,
      maxBackpressure: 64 * 1024 * 1024,
      idleTimeout: 120,
      sendPingsAutomatically: true,
      upgrade: (res, req, context) => this.#upgrade(res, req, context, authn, access),
      open: (ws) => this.#open(ws),
      close: (ws) => void this.#sockets.delete(ws),
    });
    server.route('get', '/ws/admin/register/:type', () => {
      throw circuitErrors.notWebsocket();
    });
    this.#off = admin.subscribe((seq, rec) => {
      for (const ws of this.#sockets) this.#push(ws, seq, rec);
    });
  }

  close(): void {
    this.#off();
    for (const ws of [...this.#sockets]) {
      try {
        ws.end(1001, 'Server shutdown');
      } catch {
        // already closed
      }
    }
    this.#sockets.clear();
  }

  #upgrade(res: HttpResponse, ureq: HttpRequest, context: us_socket_context_t, authn: Authenticator, access: Access): void {
    const headers: Record<string, string> = {};
    ureq.forEach((k, v) => {
      headers[k] = v;
    });
    const rawQuery = ureq.getQuery() ?? '';
    const type = decodeURIComponent(ureq.getParameter(0) ?? '');
    const req: Req = {
      method: 'GET',
      path: ureq.getUrl(),
      rawQuery,
      query: new URLSearchParams(rawQuery),
      headers,
      params: [type],
      body: Buffer.alloc(0),
      aborted: false,
      remoteAddress: Buffer.from(res.getRemoteAddressAsText()).toString(),
    };
    res.onAborted(() => {
      req.aborted = true;
    });
    const refuse = (status: number, message: string, extra: Record<string, string> = {}): void => {
      if (req.aborted) return;
      res.cork(() => {
        res.writeStatus(status === 400 ? '400 Bad Request' : status === 401 ? '401 Unauthorized' : '403 Forbidden');
        res.writeHeader('content-type', 'application/json');
        for (const [k, v] of Object.entries(extra)) res.writeHeader(k, v);
        res.end(JSON.stringify({ message }));
      });
    };
    void (async () => {
      try {
        await authorize(authn, access, req, 'circuit.read', 'node');
        const version = protocolVersion(req);
        const lastRaw = req.query.get('last');
        if (lastRaw !== null && !/^\d{1,16}$/.test(lastRaw)) throw circuitErrors.invalidLast({ value: lastRaw.slice(0, 40) });
        if (type === '') throw circuitErrors.typeRequired();
        if (req.aborted) return;
        res.cork(() => {
          res.upgrade<SocketState>(
            { type, version, last: lastRaw === null ? 0 : Number(lastRaw), seq: 0 },
            headers['sec-websocket-key'] ?? '',
            headers['sec-websocket-protocol'] ?? '',
            headers['sec-websocket-extensions'] ?? '',
            context,
          );
        });
      } catch (err) {
        if (err instanceof ApiError) refuse(err.status, err.message, err.headers);
        else {
          log.error('circuits: websocket registration failed', err);
          refuse(400, 'Registration failed');
        }
      }
    })();
  }

  #open(ws: Socket): void {
    const s = ws.getUserData();
    this.#sockets.add(ws);
    this.#send(ws, JSON.stringify({ status: 'OK', circuit_management_type: s.type, error_reason: null }));
    // Replay synchronously: no event can be stored and pushed in between.
    for (const [seq, rec] of this.#admin.store.eventsAfter(0)) {
      if (rec.ts > s.last) this.#push(ws, seq, rec);
      else s.seq = Math.max(s.seq, seq);
    }
  }

  #push(ws: Socket, seq: number, rec: EventRecord): void {
    const s = ws.getUserData();
    if (seq <= s.seq) return;
    s.seq = seq;
    if (rec.mgmt !== s.type) return;
    const frame = eventJson(rec.type, rec.ts, decode<ProposalMsg>(CircuitProposal, rec.proposal), rec.key, s.version);
    if (frame !== null) this.#send(ws, frame);
  }

  #send(ws: Socket, frame: string): void {
    if (!this.#sockets.has(ws)) return;
    try {
      ws.send(frame);
    } catch (err) {
      log.debug('circuits: send to a closed socket', err);
      this.#sockets.delete(ws);
    }
  }
}
