// The ledger explorer: reads the node's ledger gateway (the page is served at /explorer/ on
// the same port, so every request goes to `../<route>`, which also holds behind a proxy that
// mounts the node under a prefix). Everything from the chain is shown as text (textContent),
// never as markup: intkey names and payloads are anyone's input.
import { decodeCbor, fromBase64, showValue } from './cbor.js';
import { Throughput } from './chart.js';

const INTKEY_PREFIX = '1cf126';
const FAMILIES = { '1cf126': 'intkey', '000000': 'settings', '621dee': 'grid' };
const LIVE_ROWS = 20;

// ---- small helpers -------------------------------------------------------------------

const $ = (id) => document.getElementById(id);

/** An element with attributes (`on*` functions become listeners) and children (strings become text). */
function h(tag, attrs = {}, ...children) {
  const el = document.createElement(tag);
  for (const [k, v] of Object.entries(attrs)) {
    if (v === undefined || v === null || v === false) continue;
    if (k.startsWith('on')) el.addEventListener(k.slice(2), v);
    else if (k === 'dataset') Object.assign(el.dataset, v);
    else el.setAttribute(k, v === true ? '' : String(v));
  }
  for (const c of children.flat()) if (c !== undefined && c !== null) el.append(c instanceof Node ? c : String(c));
  return el;
}

const short = (id, n = 10) => (id && id.length > 2 * n ? `${id.slice(0, n)}…${id.slice(-6)}` : (id ?? ''));
const familyOf = (address) => FAMILIES[address.slice(0, 6)] ?? '';

/** GET a gateway route; resolves to the JSON body, or throws with the gateway's error message. */
async function api(path) {
  let r;
  try {
    r = await fetch(new URL(`../${path}`, location.href), { headers: { accept: 'application/json' } });
  } catch {
    // The browser says only "Failed to fetch" (or "NetworkError …"): say what it means here.
    throw new Error(`no answer from the node at ${location.host}: it is stopped, restarting or unreachable`);
  }
  let body;
  try {
    body = await r.json();
  } catch {
    throw new Error(`${r.status} ${r.statusText}`);
  }
  if (!r.ok) throw new Error(body?.error ? `${body.error.title}: ${body.error.message}` : `${r.status} ${r.statusText}`);
  return body;
}

/** A state or payload value as text: CBOR decoded when it is CBOR, else its size. */
function decoded(b64) {
  if (b64 === undefined || b64 === '') return '';
  const bytes = fromBase64(b64);
  try {
    return showValue(decodeCbor(bytes));
  } catch {
    return `${bytes.length} bytes`;
  }
}

/** The fields of a protobuf message as [field number, value] pairs: varints as numbers, length-delimited as bytes. */
function protoFields(bytes) {
  const out = [];
  let pos = 0;
  const varint = () => {
    let v = 0;
    for (let shift = 0; shift < 53; shift += 7) {
      if (pos >= bytes.length) throw new Error('truncated');
      const b = bytes[pos++];
      v += (b & 0x7f) * 2 ** shift;
      if (b < 0x80) return v;
    }
    throw new Error('varint too long');
  };
  while (pos < bytes.length) {
    const key = varint();
    const wire = key % 8;
    if (wire === 0) out.push([Math.floor(key / 8), varint()]);
    else if (wire === 2) {
      const n = varint();
      if (pos + n > bytes.length) throw new Error('truncated');
      out.push([Math.floor(key / 8), bytes.subarray(pos, pos + n)]);
      pos += n;
    } else throw new Error(`wire type ${wire}`);
  }
  return out;
}

/** A settings value (protobuf `Setting`: entries of key and value) as "key = value" lines. */
function settingEntries(b64) {
  const text = new TextDecoder('utf-8', { fatal: true });
  try {
    const lines = [];
    for (const [field, entry] of protoFields(fromBase64(b64))) {
      if (field !== 1 || typeof entry === 'number') continue;
      let key = '';
      let value = '';
      for (const [f, v] of protoFields(entry)) {
        if (f === 1 && typeof v !== 'number') key = text.decode(v);
        if (f === 2 && typeof v !== 'number') value = text.decode(v);
      }
      lines.push(`${key} = ${value}`);
    }
    if (lines.length > 0) return lines;
  } catch {
    // not a Setting: shown as bytes below
  }
  return [decoded(b64)];
}

/** A state value as lines of text, decoded as its family stores it. */
function stateEntries(address, b64) {
  const family = familyOf(address);
  if (family === 'intkey') return intkeyEntries(b64);
  if (family === 'settings') return settingEntries(b64);
  return [decoded(b64)];
}

/** An intkey state value as "name = value" lines (several names can share one address). */
function intkeyEntries(b64) {
  try {
    const v = decodeCbor(fromBase64(b64));
    if (v instanceof Map) return [...v].map(([k, x]) => `${typeof k === 'string' ? k : showValue(k)} = ${showValue(x)}`);
  } catch {
    // not intkey's encoding: shown as bytes below
  }
  return [decoded(b64)];
}

function showError(el, err) {
  el.replaceChildren(h('p', { class: 'error' }, err instanceof Error ? err.message : String(err)));
}

// ---- head, live blocks and throughput ------------------------------------------------

const chart = new Throughput($('chart'));
/** Block number by id of the rows shown, to keep them unique and ordered. */
const shown = new Map();

function setHead(block) {
  const num = Number(block.header.block_num);
  const current = Number($('head-num').dataset.num ?? -1);
  if (num < current) return;
  $('head-num').dataset.num = String(num);
  $('head-num').textContent = `#${num}`;
  $('head-id').textContent = short(block.header_signature, 16);
  $('head-id').href = `#/block/${block.header_signature}`;
  $('head-id').title = block.header_signature;
  $('head-root').textContent = short(block.header.state_root_hash, 16);
  $('head-root').title = block.header.state_root_hash;
}

function txnCount(block) {
  return block.batches.reduce((n, b) => n + b.transactions.length, 0);
}

function blockRow(block, fresh) {
  const id = block.header_signature;
  return h(
    'tr',
    { dataset: { blockId: id, blockNum: block.header.block_num }, class: fresh ? 'fresh' : undefined },
    h('td', {}, block.header.block_num),
    h('td', { class: 'mono' }, h('a', { href: `#/block/${id}`, title: id }, short(id, 12))),
    h('td', {}, String(block.batches.length)),
    h('td', {}, String(txnCount(block))),
    h('td', { class: 'mono', title: block.header.signer_public_key }, short(block.header.signer_public_key, 8)),
  );
}

/** Puts a block's row in the live list, newest first; keeps the last LIVE_ROWS. */
function showBlock(block, fresh) {
  const id = block.header_signature;
  if (shown.has(id)) return;
  const num = Number(block.header.block_num);
  const tbody = $('blocks');
  const row = blockRow(block, fresh);
  const after = [...tbody.children].find((tr) => Number(tr.dataset.blockNum) < num);
  tbody.insertBefore(row, after ?? null);
  shown.set(id, num);
  while (tbody.children.length > LIVE_ROWS) {
    const last = tbody.lastElementChild;
    shown.delete(last.dataset.blockId);
    last.remove();
  }
  setHead(block);
}

/** Blocks above this number count in the throughput chart (those committed since the page opened). */
let countAbove = null;
/** The highest block number the websocket announced. */
let announced = -1;
let pumping = false;

const headNum = () => Number($('head-num').dataset.num ?? -1);

async function loadBlocks() {
  const { data } = await api(`blocks?limit=${LIVE_ROWS}`);
  if (countAbove === null && data.length) countAbove = Number(data[0].header.block_num);
  for (const b of data) showBlock(b, false);
}

/**
 * Brings the list up to the announced head. One request at a time, for up to LIVE_ROWS
 * blocks: however fast blocks come, the page asks for them at the pace its answers arrive.
 * (At a rate of more than LIVE_ROWS blocks per round trip, the chart counts the blocks it
 * fetched: a lower bound.)
 */
async function pump() {
  if (pumping) return;
  pumping = true;
  try {
    while (announced > headNum()) {
      const before = headNum();
      const { data } = await api(`blocks?limit=${Math.min(announced - before, LIVE_ROWS)}`);
      for (const b of [...data].reverse()) {
        const num = Number(b.header.block_num);
        if (num <= before) continue;
        if (countAbove !== null && num > countAbove) chart.add(txnCount(b));
        showBlock(b, true);
      }
      if (headNum() === before) break;
    }
    refreshState();
  } catch {
    // the next block announced tries again
  } finally {
    pumping = false;
  }
}

/** The websocket: each committed block's delta announces it; the list then fetches what it lacks. */
function subscribe(delay = 1000) {
  const url = new URL('../subscriptions', location.href);
  url.protocol = location.protocol === 'https:' ? 'wss:' : 'ws:';
  const ws = new WebSocket(url);
  const live = $('live');
  let opened = false;
  ws.addEventListener('open', () => {
    opened = true;
    live.textContent = 'live';
    live.className = 'pill on';
    ws.send(JSON.stringify({ action: 'subscribe', address_prefixes: [] }));
  });
  ws.addEventListener('message', (ev) => {
    let frame;
    try {
      frame = JSON.parse(ev.data);
    } catch {
      return;
    }
    const num = Number(frame.block_num);
    if (!frame.block_id || !Number.isSafeInteger(num)) return;
    // The first frame answers the subscribe with the head as it was: not a commit seen live.
    if (countAbove === null) countAbove = num;
    announced = Math.max(announced, num);
    pump();
  });
  ws.addEventListener('close', () => {
    live.textContent = 'reconnecting';
    live.className = 'pill off';
    void loadNode(); // says at once whether the node itself is down
    // Back off while the node is away; start over once a socket opened.
    const next = opened ? 1000 : Math.min(delay * 2, 15_000);
    setTimeout(() => subscribe(next), delay);
  });
}

function tick() {
  chart.draw();
  $('rate').textContent = chart.rate().toFixed(2);
}

// ---- drill-down: block → batches → transactions → receipts ---------------------------

function crumbs(parts) {
  $('crumbs').replaceChildren(...parts.flatMap(([label, href], i) => [i ? ' › ' : '', href ? h('a', { href }, label) : h('span', {}, label)]));
}

function kv(pairs) {
  return h(
    'dl',
    { class: 'kv' },
    pairs.flatMap(([k, v]) => [h('dt', {}, k), h('dd', { class: typeof v === 'string' && /^[0-9a-f]{20,}$/.test(v) ? 'mono wrap' : undefined }, v)]),
  );
}

async function showBlockDetail(blockId) {
  const { data: b } = await api(`blocks/${blockId}`);
  crumbs([[`block #${b.header.block_num}`]]);
  return [
    kv([
      ['Block', b.header_signature],
      ['Number', b.header.block_num],
      ['Previous', b.header.previous_block_id],
      ['State root', b.header.state_root_hash],
      ['Signer', b.header.signer_public_key],
    ]),
    h('h3', {}, `Batches (${b.batches.length})`),
    h(
      'table',
      { id: 'detail-batches' },
      h('thead', {}, h('tr', {}, h('th', {}, 'Batch id'), h('th', {}, 'Txns'), h('th', {}, 'Signer'))),
      h(
        'tbody',
        {},
        b.batches.map((batch) =>
          h(
            'tr',
            { dataset: { batchId: batch.header_signature } },
            h(
              'td',
              { class: 'mono' },
              h(
                'a',
                { href: `#/block/${blockId}/batch/${batch.header_signature}`, title: batch.header_signature },
                short(batch.header_signature, 12),
              ),
            ),
            h('td', {}, String(batch.transactions.length)),
            h('td', { class: 'mono', title: batch.header.signer_public_key }, short(batch.header.signer_public_key, 8)),
          ),
        ),
      ),
    ),
  ];
}

/** An intkey payload as its command line reads ("set name 42"); other families' payloads by size. */
function payloadText(txn) {
  if (txn.header.family_name !== 'intkey') return `${fromBase64(txn.payload).length} bytes`;
  try {
    const p = decodeCbor(fromBase64(txn.payload));
    if (p instanceof Map && p.has('Verb') && p.has('Name') && p.has('Value')) return `${p.get('Verb')} ${p.get('Name')} ${p.get('Value')}`;
  } catch {
    // shown as decoded below
  }
  return decoded(txn.payload);
}

async function showBatchDetail(blockId, batchId) {
  const { data: batch } = await api(`batches/${batchId}`);
  const base = blockId ? `#/block/${blockId}/batch/${batchId}` : `#/batch/${batchId}`;
  crumbs([...(blockId ? [['block', `#/block/${blockId}`]] : []), [`batch ${short(batchId, 6)}`]]);
  return [
    kv([
      ['Batch', batch.header_signature],
      ['Signer', batch.header.signer_public_key],
    ]),
    h('h3', {}, `Transactions (${batch.transactions.length})`),
    h(
      'table',
      { id: 'detail-txns' },
      h('thead', {}, h('tr', {}, h('th', {}, 'Transaction id'), h('th', {}, 'Family'), h('th', {}, 'Payload'))),
      h(
        'tbody',
        {},
        batch.transactions.map((t) =>
          h(
            'tr',
            { dataset: { txnId: t.header_signature } },
            h(
              'td',
              { class: 'mono' },
              h('a', { href: `${base}/txn/${t.header_signature}`, title: t.header_signature }, short(t.header_signature, 12)),
            ),
            h('td', {}, `${t.header.family_name} ${t.header.family_version}`),
            h('td', { class: 'mono' }, payloadText(t)),
          ),
        ),
      ),
    ),
  ];
}

function receiptView(receipt) {
  const changes = receipt.state_changes ?? [];
  return h(
    'div',
    { id: 'detail-receipt' },
    h('h3', {}, `Receipt: state changes (${changes.length})`),
    h(
      'table',
      {},
      h('thead', {}, h('tr', {}, h('th', {}, 'Address'), h('th', {}, 'Change'), h('th', {}, 'New value'))),
      h(
        'tbody',
        {},
        changes.map((c) =>
          h(
            'tr',
            { dataset: { address: c.address } },
            h('td', { class: 'mono', title: c.address }, short(c.address, 12)),
            h('td', {}, c.type),
            h('td', { class: 'mono' }, c.type === 'DELETE' ? '' : stateEntries(c.address, c.value).join(', ')),
          ),
        ),
      ),
    ),
    h('h3', {}, `Events (${(receipt.events ?? []).length})`),
    h(
      'ul',
      {},
      (receipt.events ?? []).map((e) =>
        h('li', {}, h('strong', {}, e.event_type ?? ''), ' ', (e.attributes ?? []).map((a) => `${a.key}=${a.value}`).join(', ')),
      ),
    ),
    (receipt.data ?? []).length ? h('p', {}, `Data: ${receipt.data.length} item(s)`) : null,
  );
}

async function showTxnDetail(blockId, batchId, txnId) {
  const [{ data: t }, receipts] = await Promise.all([api(`transactions/${txnId}`), api(`receipts?id=${txnId}`)]);
  const parts = [];
  if (blockId) parts.push(['block', `#/block/${blockId}`]);
  if (batchId) parts.push([`batch ${short(batchId, 6)}`, blockId ? `#/block/${blockId}/batch/${batchId}` : `#/batch/${batchId}`]);
  parts.push([`txn ${short(txnId, 6)}`]);
  crumbs(parts);
  return [
    kv([
      ['Transaction', t.header_signature],
      ['Family', `${t.header.family_name} ${t.header.family_version}`],
      ['Payload', payloadText(t)],
      ['Inputs', t.header.inputs.join(' ')],
      ['Outputs', t.header.outputs.join(' ')],
      ['Dependencies', t.header.dependencies.join(' ') || 'none'],
      ['Signer', t.header.signer_public_key],
      ['Nonce', t.header.nonce],
    ]),
    receiptView(receipts.data[0] ?? {}),
  ];
}

/** Renders the detail panel from the location hash: #/block/B[/batch/b[/txn/t]], #/batch/b, #/txn/t. */
async function route() {
  const parts = location.hash.replace(/^#\/?/, '').split('/');
  const ids = {};
  for (let i = 0; i + 1 < parts.length; i += 2) ids[parts[i]] = parts[i + 1];
  const detail = $('detail');
  const valid = (v) => v === undefined || /^[0-9a-f]{128}$/.test(v);
  if (!(ids.block || ids.batch || ids.txn) || !valid(ids.block) || !valid(ids.batch) || !valid(ids.txn)) return;
  detail.setAttribute('aria-busy', 'true');
  try {
    let content;
    if (ids.txn) content = await showTxnDetail(ids.block, ids.batch, ids.txn);
    else if (ids.batch) content = await showBatchDetail(ids.block, ids.batch);
    else content = await showBlockDetail(ids.block);
    detail.replaceChildren(...content);
  } catch (err) {
    showError(detail, err);
  } finally {
    detail.removeAttribute('aria-busy');
  }
}

// ---- state by address prefix ---------------------------------------------------------

let stateNext = null;
/** The prefix the state table shows, and whether it shows only its first page (then new blocks refresh it). */
let stateShown = { prefix: null, firstPageOnly: true };
let stateTimer = null;

function refreshState() {
  if (stateShown.prefix === null || !stateShown.firstPageOnly || stateTimer !== null) return;
  stateTimer = setTimeout(() => {
    stateTimer = null;
    browseState(stateShown.prefix, null);
  }, 300);
}

async function browseState(prefix, start) {
  const errEl = $('state-error');
  errEl.hidden = true;
  const tbody = $('state-rows');
  try {
    const q = new URLSearchParams({ address: prefix, limit: '20' });
    if (start) q.set('start', start);
    const body = await api(`state?${q}`);
    stateShown = { prefix, firstPageOnly: !start };
    if (!start) tbody.replaceChildren();
    for (const leaf of body.data) {
      const family = familyOf(leaf.address);
      const value = stateEntries(leaf.address, leaf.data);
      tbody.append(
        h(
          'tr',
          { dataset: { address: leaf.address } },
          h('td', { class: 'mono', title: leaf.address }, short(leaf.address, 14), family ? h('span', { class: 'tag' }, family) : null),
          h(
            'td',
            { class: 'mono' },
            value.map((v) => h('div', {}, v)),
          ),
        ),
      );
    }
    if (!tbody.children.length) tbody.append(h('tr', {}, h('td', { colspan: '2', class: 'hint' }, 'No state under this prefix.')));
    stateNext = body.paging?.next_position ?? null;
    $('state-more').hidden = stateNext === null;
  } catch (err) {
    stateShown = { prefix: null, firstPageOnly: true };
    tbody.replaceChildren();
    $('state-more').hidden = true;
    errEl.textContent = err.message;
    errEl.hidden = false;
  }
}

// ---- batch status --------------------------------------------------------------------

async function lookUpStatus(id) {
  const out = $('status-result');
  out.replaceChildren(h('p', { class: 'hint' }, 'Looking up…'));
  try {
    const { data } = await api(`batch_statuses?id=${encodeURIComponent(id)}`);
    out.replaceChildren(
      ...data.map((s) =>
        h(
          'div',
          { class: 'status-entry', dataset: { status: s.status } },
          h('span', { class: `pill s-${s.status.toLowerCase()}` }, s.status),
          ' ',
          s.status === 'COMMITTED'
            ? h('a', { href: `#/batch/${s.id}`, class: 'mono' }, short(s.id, 12))
            : h('span', { class: 'mono' }, short(s.id, 12)),
          s.invalid_transactions.length
            ? h(
                'ul',
                {},
                s.invalid_transactions.map((t) => h('li', {}, `${short(t.id, 8)}: ${t.message ?? 'invalid'}`)),
              )
            : null,
        ),
      ),
    );
  } catch (err) {
    showError(out, err);
  }
}

// ---- node status ---------------------------------------------------------------------

async function loadNode() {
  const health = $('node-health');
  const status = $('node-status');
  try {
    const [{ data: st }, { data: peers }] = await Promise.all([api('status'), api('peers')]);
    health.textContent = 'node ok';
    health.className = 'pill on';
    status.textContent = 'answering';
    status.className = '';
    $('node-endpoint').textContent = st.endpoint || '(none advertised)';
    $('node-peers').textContent = peers.length ? peers.join(' ') : 'none configured';
  } catch (err) {
    // A node stopped on a fault answers /status 503 with the reason.
    health.textContent = 'node down';
    health.className = 'pill bad';
    status.textContent = err.message;
    status.className = 'error';
  }
}

// ---- start ---------------------------------------------------------------------------

$('state-form').addEventListener('submit', (e) => {
  e.preventDefault();
  const prefix = $('state-prefix').value.trim().toLowerCase();
  browseState(prefix, null);
});
$('state-more').addEventListener('click', () => {
  if (stateNext) browseState($('state-prefix').value.trim().toLowerCase(), stateNext);
});
$('status-form').addEventListener('submit', (e) => {
  e.preventDefault();
  lookUpStatus($('status-id').value.trim().toLowerCase());
});
window.addEventListener('hashchange', route);
window.addEventListener('resize', tick);

loadBlocks().catch((err) => showError($('detail'), err));
subscribe();
loadNode();
setInterval(loadNode, 10_000);
setInterval(tick, 1000);
tick();
route();
browseState(INTKEY_PREFIX, null);
