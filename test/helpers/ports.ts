/**
 * Free loopback ports for tests that must name a port before the process that listens on it
 * starts (a walk-through's documented ports, an etcd member's URLs, an OAuth callback).
 *
 * A port from the kernel (`listen(0)`) is a poor choice there: it comes from the ephemeral
 * range, from which every outgoing connection and every other test's port-0 listener also
 * takes its local port, so between the pick and the listen another socket can take it (the
 * listener then fails with EADDRINUSE). These ports are picked at random below that range,
 * where the kernel never hands out a port by itself; all of one call's ports are held open
 * until all are picked, so none is given twice.
 */
import { readFileSync } from 'node:fs';
import { createServer, type Server } from 'node:net';

/** The lowest port picked. */
const FLOOR = 10_000;

/** The kernel's ephemeral range (outgoing connections take their local ports from it). */
export function ephemeralRange(): [number, number] {
  try {
    const [lo, hi] = readFileSync('/proc/sys/net/ipv4/ip_local_port_range', 'utf8').trim().split(/\s+/).map(Number);
    if (lo && hi) return [lo, hi];
  } catch {
    // not Linux
  }
  return [32768, 60999];
}

function listen(port: number): Promise<Server | null> {
  return new Promise((res) => {
    const s = createServer();
    s.once('error', () => res(null));
    s.listen(port, '127.0.0.1', () => res(s));
  });
}

/**
 * n distinct ports free on 127.0.0.1, picked at random from 10000 up to the ephemeral range;
 * from the kernel (port 0) where that range leaves no room. None of `avoid` is given (ports
 * an earlier call gave that are not listened on yet).
 */
export async function freePorts(n: number, avoid: Iterable<number> = []): Promise<number[]> {
  const skip = new Set(avoid);
  const [lo] = ephemeralRange();
  const held: Server[] = [];
  try {
    for (let tries = 0; held.length < n && tries < 1000; tries++) {
      const port = lo > FLOOR + 1000 ? FLOOR + Math.floor(Math.random() * (lo - FLOOR)) : 0;
      if (port !== 0 && skip.has(port)) continue;
      const s = await listen(port);
      if (s && !skip.has((s.address() as { port: number }).port)) held.push(s);
      else s?.close();
    }
    if (held.length < n) throw new Error(`only ${held.length} of ${n} free ports found`);
    return held.map((s) => (s.address() as { port: number }).port);
  } finally {
    await Promise.all(held.map((s) => new Promise((r) => s.close(r))));
  }
}

/** One free port, as freePorts(1). */
export async function freePort(): Promise<number> {
  return (await freePorts(1))[0] as number;
}
