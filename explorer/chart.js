// The throughput chart: transactions committed per 10-second bucket over the last five
// minutes, counted in the browser as blocks arrive on the websocket (blocks carry no time
// of their own), drawn on a canvas.

export const BUCKET_MS = 10_000;
export const BUCKETS = 30;

export class Throughput {
  /** @param {HTMLCanvasElement} canvas */
  constructor(canvas) {
    this.canvas = canvas;
    /** @type {Array<{t: number, txns: number}>} */
    this.samples = [];
    this.total = 0;
    this.since = Date.now();
  }

  /** A block seen now with `txns` transactions. */
  add(txns, now = Date.now()) {
    this.samples.push({ t: now, txns });
    this.total += txns;
    const cut = now - BUCKET_MS * BUCKETS;
    while (this.samples.length && this.samples[0].t < cut) this.samples.shift();
    this.canvas.dataset.total = String(this.total);
  }

  /** Transactions per bucket, oldest first, the last bucket ending now. */
  buckets(now = Date.now()) {
    const out = new Array(BUCKETS).fill(0);
    for (const s of this.samples) {
      const i = BUCKETS - 1 - Math.floor((now - s.t) / BUCKET_MS);
      if (i >= 0 && i < BUCKETS) out[i] += s.txns;
    }
    return out;
  }

  /** Transactions per second over the last minute (or since the page opened, if sooner). */
  rate(now = Date.now()) {
    const span = Math.min(60_000, Math.max(1000, now - this.since));
    const n = this.samples.filter((s) => now - s.t <= span).reduce((a, s) => a + s.txns, 0);
    return n / (span / 1000);
  }

  draw(now = Date.now()) {
    const c = this.canvas;
    const ratio = window.devicePixelRatio || 1;
    const w = c.clientWidth;
    const h = c.clientHeight;
    if (c.width !== Math.round(w * ratio) || c.height !== Math.round(h * ratio)) {
      c.width = Math.round(w * ratio);
      c.height = Math.round(h * ratio);
    }
    const g = c.getContext('2d');
    g.setTransform(ratio, 0, 0, ratio, 0, 0);
    g.clearRect(0, 0, w, h);
    const css = getComputedStyle(c);
    const ink = css.getPropertyValue('--chart-ink').trim() || '#333';
    const bar = css.getPropertyValue('--chart-bar').trim() || '#2a7';
    const grid = css.getPropertyValue('--chart-grid').trim() || '#ddd';
    const data = this.buckets(now);
    // At least 2, so that the axis reads 0, 1, 2 rather than 0, 1, 1 when nothing was committed.
    const top = Math.max(2, niceCeil(Math.max(1, ...data)));
    const left = 40;
    const bottom = h - 18;
    const plotH = bottom - 8;
    const plotW = w - left - 6;
    g.font = '11px system-ui, sans-serif';
    g.fillStyle = ink;
    g.strokeStyle = grid;
    g.lineWidth = 1;
    g.textAlign = 'right';
    g.textBaseline = 'middle';
    for (const f of [0, 0.5, 1]) {
      const y = Math.round(bottom - f * plotH) + 0.5;
      g.beginPath();
      g.moveTo(left, y);
      g.lineTo(left + plotW, y);
      g.stroke();
      g.fillText(String(Math.round(top * f)), left - 6, y);
    }
    const slot = plotW / BUCKETS;
    g.fillStyle = bar;
    data.forEach((v, i) => {
      if (v === 0) return;
      const bh = (v / top) * plotH;
      g.fillRect(left + i * slot + 1, bottom - bh, Math.max(1, slot - 2), bh);
    });
    g.fillStyle = ink;
    if (data.every((v) => v === 0)) {
      g.textAlign = 'center';
      g.fillText('no transactions committed since the page opened', left + plotW / 2, bottom - plotH / 2);
    }
    g.textBaseline = 'alphabetic';
    g.textAlign = 'left';
    g.fillText('−5 min', left, h - 4);
    g.textAlign = 'right';
    g.fillText('now', left + plotW, h - 4);
  }
}

/** 1, 2, 5 × 10^n at or above `v`. */
function niceCeil(v) {
  const p = 10 ** Math.floor(Math.log10(v));
  for (const m of [1, 2, 5, 10]) if (m * p >= v) return m * p;
  return 10 * p;
}
