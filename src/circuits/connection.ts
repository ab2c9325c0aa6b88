/**
 * One TCP connection to a peer: frame version negotiation, frames, and the symmetric v1
 * authorization handshake in which each side proves its own
 * identity (trust: it names its node id; challenge: it signs a nonce with its peering
 * key) and verifies the other's. Any protocol error (bad checksum, unknown version, a
 * message that does not decode, a non-handshake message before the handshake ends, a bad
 * signature) ends this connection with one log line and touches nothing else.
 */
import { randomBytes } from 'node:crypto';
import type { Socket } from 'node:net';
import { verify, type Signer } from '../crypto/secp256k1.js';
import { log } from '../log.js';
import { FRAME_VERSION, FrameError, FrameReader, frame } from './frame.js';
import {
  AuthChallengeNonceResponse,
  AuthChallengeSubmitRequest,
  AuthChallengeSubmitResponse,
  AuthorizationError,
  AuthorizationMessage,
  AuthProtocolRequest,
  AuthProtocolResponse,
  AuthTrustRequest,
  AuthType,
  NetworkMessage,
  NetworkType,
  PeerAuth,
  decode,
  encode,
} from '../proto/circuits.js';

/** A peer identity: a node id (trust) or `public_key::<hex>` (challenge). */
export type Token = string;
export const CHALLENGE_PREFIX = 'public_key::';
export const isChallenge = (t: Token): boolean => t.startsWith(CHALLENGE_PREFIX);
export const challengeToken = (publicKeyHex: string): Token => `${CHALLENGE_PREFIX}${publicKeyHex}`;

export interface LocalIdentity {
  nodeId: string;
  /** The peering key: signs challenge nonces. */
  signer: Signer;
}

export interface ConnectionEvents {
  authorized(c: Connection): void;
  message(c: Connection, type: number, payload: Buffer): void;
  closed(c: Connection, reason: string): void;
}

const NONCE_LEN = 70;
let nextId = 1;

interface NetMsg {
  messageType: number;
  payload: Buffer;
}
interface AuthMsg {
  messageType: number;
  payload: Buffer;
}

export class Connection {
  readonly id = nextId++;
  readonly outbound: boolean;
  /** The identity the remote proved (set once authorized). */
  remote: Token | null = null;
  /** The identity this side proved on this connection. */
  local: Token | null;
  authorized = false;
  closed = false;
  readonly #socket: Socket;
  readonly #me: LocalIdentity;
  readonly #expected: Token | null;
  readonly #events: ConnectionEvents;
  readonly #reader: FrameReader;
  #nonce: Buffer | null = null;
  #sent: 'trust' | 'challenge' | null = null;
  #gotOwnResponse = false;
  #gotRemoteComplete = false;
  readonly #timer: NodeJS.Timeout;

  constructor(
    socket: Socket,
    opts: { me: LocalIdentity; expected: Token | null; local: Token | null; events: ConnectionEvents; handshakeMs: number; maxFrame: number },
  ) {
    this.#socket = socket;
    this.#me = opts.me;
    this.#expected = opts.expected;
    this.local = opts.local;
    this.outbound = opts.expected !== null;
    this.#events = opts.events;
    this.#reader = new FrameReader(this.outbound ? 'dial' : 'accept', opts.maxFrame);
    socket.setNoDelay(true);
    socket.on('data', (d: Buffer) => this.#onData(d));
    socket.on('error', (err) => this.close(`socket error: ${err.message}`, false));
    socket.on('close', () => this.close('connection closed by the peer', false));
    this.#timer = setTimeout(() => {
      if (!this.authorized) this.close('handshake did not complete in time');
    }, opts.handshakeMs);
    this.#timer.unref();
    if (this.outbound) {
      const v = Buffer.alloc(4);
      v.writeUInt16BE(FRAME_VERSION, 0);
      v.writeUInt16BE(FRAME_VERSION, 2);
      socket.write(v);
      this.#sendAuth(AuthType.PROTOCOL_REQUEST, encode(AuthProtocolRequest, { authProtocolMin: 1, authProtocolMax: 1 }));
    }
  }

  get label(): string {
    return `${this.outbound ? 'to' : 'from'} ${this.remote ?? this.#expected ?? this.#socket.remoteAddress ?? '?'} (#${this.id})`;
  }

  /** Sends one NetworkMessage; false when the connection is gone. */
  send(type: number, payload: Uint8Array): boolean {
    if (this.closed) return false;
    return this.#write(encode(NetworkMessage, { messageType: type, payload }));
  }

  #write(bytes: Uint8Array): boolean {
    try {
      this.#socket.write(frame(bytes));
      return true;
    } catch (err) {
      this.close(`write failed: ${(err as Error).message}`);
      return false;
    }
  }

  /** Ends the connection. `graceful` lets bytes the peer already sent arrive (duplicates). */
  close(reason: string, logIt = true, graceful = false): void {
    if (this.closed) return;
    this.closed = true;
    clearTimeout(this.#timer);
    if (logIt) log.info(`peer connection ${this.label} closed: ${reason}`);
    else log.debug(`peer connection ${this.label} closed: ${reason}`);
    if (graceful) {
      // Keep reading what the peer already sent (it is delivered), stop writing.
      this.#socket.end();
      setTimeout(() => this.#socket.destroy(), 5000).unref();
    } else {
      this.#socket.destroy();
    }
    this.#events.closed(this, reason);
  }

  #onData(d: Buffer): void {
    if (this.closed && !this.authorized) return;
    let got: { negotiated?: number[]; frames: Buffer[] };
    try {
      got = this.#reader.push(d);
    } catch (err) {
      if (err instanceof FrameError) return this.close(`protocol error: ${err.message}`);
      throw err;
    }
    if (got.negotiated) {
      if (this.outbound) {
        if (got.negotiated[0] !== FRAME_VERSION) return this.close(`peer refused frame version ${FRAME_VERSION} (answered ${got.negotiated[0]})`);
      } else {
        const [min, max] = got.negotiated as [number, number];
        const ok = min <= FRAME_VERSION && FRAME_VERSION <= max;
        const v = Buffer.alloc(2);
        v.writeUInt16BE(ok ? FRAME_VERSION : 0, 0);
        this.#socket.write(v);
        if (!ok) return this.close(`peer offered frame versions ${min}..${max}; this node speaks ${FRAME_VERSION}`);
        this.#sendAuth(AuthType.PROTOCOL_REQUEST, encode(AuthProtocolRequest, { authProtocolMin: 1, authProtocolMax: 1 }));
      }
    }
    for (const f of got.frames) {
      if (this.closed && !this.authorized) return;
      let m: NetMsg;
      try {
        m = decode<NetMsg>(NetworkMessage, f);
      } catch (err) {
        return this.close(`protocol error: undecodable message (${(err as Error).message})`);
      }
      if (m.messageType === NetworkType.AUTHORIZATION) {
        if (this.authorized) continue; // late handshake messages are harmless
        try {
          this.#onAuth(decode<AuthMsg>(AuthorizationMessage, m.payload));
        } catch (err) {
          return this.close(`protocol error: bad authorization message (${(err as Error).message})`);
        }
      } else if (!this.authorized) {
        return this.close(`protocol error: message type ${m.messageType} before the handshake ended`);
      } else {
        this.#events.message(this, m.messageType, m.payload);
      }
    }
  }

  #sendAuth(type: number, payload: Uint8Array): void {
    this.send(NetworkType.AUTHORIZATION, encode(AuthorizationMessage, { messageType: type, payload }));
  }

  #refuse(why: string): void {
    this.#sendAuth(AuthType.ERROR, encode(AuthorizationError, { errorType: 1, errorMessage: why }));
    this.close(`authorization refused: ${why}`);
  }

  #onAuth(m: AuthMsg): void {
    switch (m.messageType) {
      case AuthType.PROTOCOL_REQUEST: {
        const r = decode<{ authProtocolMin: number; authProtocolMax: number }>(AuthProtocolRequest, m.payload);
        if (r.authProtocolMin > 1 || r.authProtocolMax < 1)
          return this.#refuse(`authorization protocol ${r.authProtocolMin}..${r.authProtocolMax} not supported`);
        const accepted =
          this.#expected === null ? [PeerAuth.TRUST, PeerAuth.CHALLENGE] : [isChallenge(this.#expected) ? PeerAuth.CHALLENGE : PeerAuth.TRUST];
        this.#sendAuth(AuthType.PROTOCOL_RESPONSE, encode(AuthProtocolResponse, { authProtocol: 1, acceptedAuthorizationType: accepted }));
        return;
      }
      case AuthType.PROTOCOL_RESPONSE: {
        const r = decode<{ authProtocol: number; acceptedAuthorizationType: number[] }>(AuthProtocolResponse, m.payload);
        if (r.authProtocol !== 1) return this.#refuse(`authorization protocol ${r.authProtocol} not supported`);
        if (this.#sent) return this.#refuse('duplicate protocol response');
        let method: number;
        if (this.local !== null) {
          method = isChallenge(this.local) ? PeerAuth.CHALLENGE : PeerAuth.TRUST;
          if (!r.acceptedAuthorizationType.includes(method))
            return this.#refuse(`the peer does not accept ${method === PeerAuth.TRUST ? 'trust' : 'challenge'} authorization`);
        } else {
          const m0 = r.acceptedAuthorizationType.find((x) => x === PeerAuth.TRUST || x === PeerAuth.CHALLENGE);
          if (m0 === undefined) return this.#refuse('no common authorization type');
          method = m0;
          this.local = method === PeerAuth.TRUST ? this.#me.nodeId : challengeToken(this.#me.signer.publicKey);
        }
        if (method === PeerAuth.TRUST) {
          this.#sent = 'trust';
          this.#sendAuth(AuthType.TRUST_REQUEST, encode(AuthTrustRequest, { identity: this.#me.nodeId }));
        } else {
          this.#sent = 'challenge';
          this.#sendAuth(AuthType.NONCE_REQUEST, new Uint8Array(0));
        }
        return;
      }
      case AuthType.TRUST_REQUEST: {
        const r = decode<{ identity: string }>(AuthTrustRequest, m.payload);
        if (this.remote !== null) return this.#refuse('identity already established');
        if (this.#expected !== null && isChallenge(this.#expected)) return this.#refuse('this connection requires challenge authorization');
        if (r.identity === '' || isChallenge(r.identity) || r.identity.length > 256) return this.#refuse('invalid trust identity');
        if (this.#expected !== null && r.identity !== this.#expected)
          return this.#refuse(`expected node ${this.#expected}, the peer claims ${r.identity}`);
        this.remote = r.identity;
        this.#sendAuth(AuthType.TRUST_RESPONSE, new Uint8Array(0));
        break;
      }
      case AuthType.NONCE_REQUEST: {
        if (this.#expected !== null && !isChallenge(this.#expected)) return this.#refuse('this connection requires trust authorization');
        if (this.#nonce) return this.#refuse('nonce already sent');
        this.#nonce = randomBytes(NONCE_LEN);
        this.#sendAuth(AuthType.NONCE_RESPONSE, encode(AuthChallengeNonceResponse, { nonce: this.#nonce }));
        return;
      }
      case AuthType.NONCE_RESPONSE: {
        if (this.#sent !== 'challenge') return this.#refuse('unexpected nonce');
        const r = decode<{ nonce: Buffer }>(AuthChallengeNonceResponse, m.payload);
        if (r.nonce.length === 0) return this.#refuse('empty nonce');
        const signature = Buffer.from(this.#me.signer.sign(r.nonce), 'hex');
        const publicKey = Buffer.from(this.#me.signer.publicKey, 'hex');
        this.#sendAuth(AuthType.SUBMIT_REQUEST, encode(AuthChallengeSubmitRequest, { submitRequests: [{ publicKey, signature }] }));
        return;
      }
      case AuthType.SUBMIT_REQUEST: {
        if (!this.#nonce || this.remote !== null) return this.#refuse('unexpected challenge submission');
        const r = decode<{ submitRequests: Array<{ publicKey: Buffer; signature: Buffer }> }>(AuthChallengeSubmitRequest, m.payload);
        if (r.submitRequests.length === 0) return this.#refuse('no signature submitted');
        const keys: string[] = [];
        for (const s of r.submitRequests) {
          const key = Buffer.from(s.publicKey).toString('hex');
          if (!verify(Buffer.from(s.signature).toString('hex'), this.#nonce, key)) return this.#refuse('challenge signature is invalid');
          keys.push(key);
        }
        const want = this.#expected === null ? null : this.#expected.slice(CHALLENGE_PREFIX.length);
        if (want !== null && !keys.includes(want)) return this.#refuse(`the expected key ${want} was not submitted`);
        const key = want ?? keys[0]!;
        this.remote = challengeToken(key);
        this.#sendAuth(AuthType.SUBMIT_RESPONSE, encode(AuthChallengeSubmitResponse, { publicKey: Buffer.from(key, 'hex') }));
        break;
      }
      case AuthType.TRUST_RESPONSE:
      case AuthType.SUBMIT_RESPONSE: {
        const want = m.messageType === AuthType.TRUST_RESPONSE ? 'trust' : 'challenge';
        if (this.#sent !== want || this.#gotOwnResponse) return this.#refuse(`unexpected ${want} response`);
        this.#gotOwnResponse = true;
        this.#sendAuth(AuthType.COMPLETE, new Uint8Array(0));
        break;
      }
      case AuthType.COMPLETE:
        this.#gotRemoteComplete = true;
        break;
      case AuthType.ERROR: {
        const r = decode<{ errorMessage: string }>(AuthorizationError, m.payload);
        return this.close(`the peer refused authorization: ${r.errorMessage.slice(0, 200)}`);
      }
      default:
        return this.#refuse(`unsupported authorization message ${m.messageType}`);
    }
    if (this.remote !== null && this.#gotOwnResponse && this.#gotRemoteComplete && !this.authorized) {
      this.authorized = true;
      clearTimeout(this.#timer);
      this.#events.authorized(this);
    }
  }
}
