/**
 * Upstream's TCP framing: once per connection the dialling
 * side sends its supported frame versions (BE u16 min, max) and the accepting side answers
 * the version it uses (BE u16, 0 = none); then every message is a frame: BE u16 version
 * (1), BE u32 length, one LRC checksum byte over those six bytes, and the payload.
 */
export const FRAME_VERSION = 1;
export const HEADER_LEN = 7;

/** ISO 1155 LRC: byte sum mod 256, then two's complement. */
export function lrc(bytes: Uint8Array): number {
  let sum = 0;
  for (const b of bytes) sum = (sum + b) & 0xff;
  return ((sum ^ 0xff) + 1) & 0xff;
}

export function frame(payload: Uint8Array): Buffer {
  const out = Buffer.allocUnsafe(HEADER_LEN + payload.length);
  out.writeUInt16BE(FRAME_VERSION, 0);
  out.writeUInt32BE(payload.length, 2);
  out[6] = lrc(out.subarray(0, 6));
  out.set(payload, HEADER_LEN);
  return out;
}

export class FrameError extends Error {}

/**
 * Reassembles frames from a byte stream. `negotiate` is the number of bytes of the
 * version exchange still expected before frames start (4 on the accepting side, 2 on the
 * dialling side).
 */
export class FrameReader {
  #buf: Buffer = Buffer.alloc(0);
  #negotiating: 'accept' | 'dial' | null;
  readonly #maxFrame: number;

  constructor(side: 'accept' | 'dial', maxFrame: number) {
    this.#negotiating = side;
    this.#maxFrame = maxFrame;
  }

  /**
   * Feeds bytes; returns the complete frame payloads and, once, the negotiation result:
   * for the accepting side the [min, max] the dialler offered, for the dialling side the
   * version chosen. Throws FrameError on a protocol error.
   */
  push(chunk: Buffer): { negotiated?: number[]; frames: Buffer[] } {
    this.#buf = this.#buf.length === 0 ? chunk : Buffer.concat([this.#buf, chunk]);
    const out: { negotiated?: number[]; frames: Buffer[] } = { frames: [] };
    if (this.#negotiating === 'accept') {
      if (this.#buf.length < 4) return out;
      out.negotiated = [this.#buf.readUInt16BE(0), this.#buf.readUInt16BE(2)];
      this.#buf = this.#buf.subarray(4);
      this.#negotiating = null;
    } else if (this.#negotiating === 'dial') {
      if (this.#buf.length < 2) return out;
      out.negotiated = [this.#buf.readUInt16BE(0)];
      this.#buf = this.#buf.subarray(2);
      this.#negotiating = null;
    }
    while (this.#buf.length >= HEADER_LEN) {
      const version = this.#buf.readUInt16BE(0);
      if (version !== FRAME_VERSION) throw new FrameError(`unknown frame version ${version}`);
      if (lrc(this.#buf.subarray(0, 6)) !== this.#buf[6]) throw new FrameError('frame header checksum mismatch');
      const len = this.#buf.readUInt32BE(2);
      if (len > this.#maxFrame) throw new FrameError(`frame of ${len} bytes exceeds the limit of ${this.#maxFrame}`);
      if (this.#buf.length < HEADER_LEN + len) break;
      out.frames.push(Buffer.from(this.#buf.subarray(HEADER_LEN, HEADER_LEN + len)));
      this.#buf = this.#buf.subarray(HEADER_LEN + len);
    }
    return out;
  }
}
