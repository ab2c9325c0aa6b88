/** The small part of `ws` (no bundled types; installed as a dependency of uws-js-unofficial) the tests use. */
declare module 'ws' {
  import { EventEmitter } from 'node:events';

  class WebSocket extends EventEmitter {
    constructor(url: string, options?: { headers?: Record<string, string> });
    readonly readyState: number;
    send(data: string): void;
    close(code?: number): void;
    terminate(): void;
    /** Stops / restarts reading from the connection. */
    pause(): void;
    resume(): void;
    on(event: 'message', cb: (data: Buffer, isBinary: boolean) => void): this;
    on(event: 'open', cb: () => void): this;
    on(event: 'close', cb: (code: number, reason: Buffer) => void): this;
    on(event: 'error', cb: (err: Error) => void): this;
    on(event: 'unexpected-response', cb: (req: unknown, res: { statusCode: number }) => void): this;
  }
  export default WebSocket;
}
