/** etcd endpoints as the settings give them (--cluster-etcd, and `cairn cluster --etcd`). */

/** Endpoints from a comma-separated list; each must be an http(s) URL. */
export function parseEndpoints(v: string): string[] {
  const list = v
    .split(',')
    .map((s) => s.trim())
    .filter(Boolean);
  if (list.length === 0) throw new Error('no etcd endpoint given');
  for (const u of list) {
    let url: URL;
    try {
      url = new URL(u);
    } catch {
      throw new Error(`etcd endpoint "${u}" is not a URL (expected http://host:port or https://host:port)`);
    }
    if (url.protocol !== 'http:' && url.protocol !== 'https:') throw new Error(`etcd endpoint "${u}": expected http:// or https://`);
  }
  return list;
}
