/**
 * The one error type of the three interfaces. A handler (or a parser, or an interface's
 * permission hook) throws it; the server turns it into the interface's own error body
 * (ledger gateway: `{"error": {code, message, title}}`; node API and data API: `{"message"}`)
 * through the interface's `errorReply`. Handlers do not construct it themselves: each error is
 * defined once in its interface's catalog and constructed by name (src/http/errors.ts).
 */
export class ApiError extends Error {
  constructor(
    readonly status: number,
    message: string,
    /** The interface's own error code, if its wire format has one (the ledger gateway's numbered table). */
    readonly code?: number,
    /** Extra reply headers (`www-authenticate`, `retry-after`). */
    readonly headers?: Record<string, string>,
  ) {
    super(message);
  }
}
