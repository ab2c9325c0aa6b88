/** Submits pre-signed batches at full speed (retrying on 429) and waits for their commits. */
import type { Client } from './http.js';
import type { GenBatch } from './batches.js';

export async function submitAll(client: Client, batches: GenBatch[], connections: number): Promise<number> {
  let next = 0;
  let n429 = 0;
  const worker = async (): Promise<void> => {
    for (;;) {
      const i = next++;
      if (i >= batches.length) return;
      for (;;) {
        const r = await client.request('POST', '/batches', batches[i]!.body);
        if (r.status === 202) break;
        if (r.status !== 429) throw new Error(`submit failed: ${r.status} ${r.body}`);
        n429++;
        await new Promise((res) => setTimeout(res, 2));
      }
    }
  };
  await Promise.all(Array.from({ length: connections }, () => worker()));
  return n429;
}

/** Waits until none of the ids is PENDING; returns how many are not COMMITTED. */
export async function waitAll(client: Client, ids: string[]): Promise<number> {
  let notCommitted = 0;
  for (let i = 0; i < ids.length; i += 1000) {
    const chunk = ids.slice(i, i + 1000);
    for (;;) {
      const r = await client.request('POST', '/batch_statuses?wait=60', Buffer.from(JSON.stringify(chunk)), 'application/json');
      const data = (JSON.parse(r.body) as { data: Array<{ status: string }> }).data;
      if (data.some((d) => d.status === 'PENDING')) continue;
      notCommitted += data.filter((d) => d.status !== 'COMMITTED').length;
      break;
    }
  }
  return notCommitted;
}
