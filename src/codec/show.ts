/**
 * A client-sent value as text for an error message. String(v) and `${v}` call the value's
 * own toString/valueOf: a JSON object like {"toString": 1} makes them throw, which turned
 * a 400 into a 500 (or, inside a websocket handler, ended the process).
 */
export function show(v: unknown, max = 200): string {
  let s: string;
  if (typeof v === 'string') s = v;
  else {
    try {
      s = JSON.stringify(v) ?? typeof v;
    } catch {
      s = typeof v;
    }
  }
  return s.length > max ? `${s.slice(0, max)}…` : s;
}
