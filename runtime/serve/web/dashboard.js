// dashboard.js: the dashboard of `strata serve` (/dashboard): this server's
// /metrics read every 2 s, each figure a card with its last two minutes as a
// small line. Rates are differences of counters over the polling interval.
'use strict';
(() => {
  const $ = (id) => document.getElementById(id);
  const EVERY = 2000, KEEP = 60;
  const history = {};
  let last = null;                               // the previous poll's counters and time

  const headers = () => window.strataKey.headers();   // key.js

  // Prometheus text: name{labels} value, the comments skipped
  function parse(text) {
    const out = [];
    for (const line of text.split('\n')) {
      const m = /^([a-zA-Z_:][\w:]*)(?:\{([^}]*)\})?\s+(\S+)$/.exec(line);
      if (!m) continue;
      const labels = {};
      for (const kv of (m[2] || '').split(',')) {
        const p = /^\s*(\w+)="(.*)"\s*$/.exec(kv);
        if (p) labels[p[1]] = p[2];
      }
      out.push({ name: m[1], labels, value: Number(m[3]) });
    }
    return out;
  }
  const sum = (ms, name, pred) => ms.filter((s) => s.name === name && (!pred || pred(s.labels)))
    .reduce((a, s) => a + s.value, 0);
  const has = (ms, name) => ms.some((s) => s.name === name);

  function bytes(n) {
    const u = ['B', 'KiB', 'MiB', 'GiB', 'TiB'];
    let i = 0;
    while (n >= 1024 && i < u.length - 1) { n /= 1024; i++; }
    return n.toFixed(i ? 1 : 0) + ' ' + u[i];
  }
  function card(id, title, text, value) {
    let c = $('card-' + id);
    if (!c) {
      c = document.createElement('div');
      c.className = 'card';
      c.id = 'card-' + id;
      const t = document.createElement('div');
      t.className = 'muted';
      t.textContent = title;
      const v = document.createElement('div');
      v.className = 'v';
      v.id = id;
      const svg = document.createElementNS('http://www.w3.org/2000/svg', 'svg');
      svg.setAttribute('viewBox', '0 0 ' + (KEEP - 1) + ' 40');
      svg.setAttribute('preserveAspectRatio', 'none');
      svg.appendChild(document.createElementNS('http://www.w3.org/2000/svg', 'polyline'));
      c.append(t, v, svg);
      $('cards').appendChild(c);
    }
    $(id).textContent = text;
    const h = history[id] = (history[id] || []).concat([value]).slice(-KEEP);
    const top = Math.max(...h, 1e-9);
    const pts = h.map((y, i) => (i + KEEP - h.length) + ',' + (39 - 38 * y / top).toFixed(1)).join(' ');
    c.querySelector('polyline').setAttribute('points', pts);
  }

  async function poll() {
    try {
      const r = await fetch('/metrics', { headers: headers() });
      if (r.status === 401) { document.body.dataset.state = 'key'; window.strataKey.ask(poll); return; }
      if (!r.ok) throw new Error(r.status + ' ' + r.statusText);
      const ms = parse(await r.text()), now = performance.now();
      const api = (l) => l.endpoint && l.endpoint.startsWith('/v1/');
      const c = {
        requests: sum(ms, 'strata_requests_total', api),
        errors: sum(ms, 'strata_requests_total', (l) => api(l) && Number(l.status) >= 400),
        prompt: sum(ms, 'strata_prompt_tokens_total'), cached: sum(ms, 'strata_prompt_tokens_cached_total'),
        generated: sum(ms, 'strata_generated_tokens_total'),
        early: sum(ms, 'strata_generations_ended_early_total'),
        tierBytes: sum(ms, 'strata_expert_tier_disk_bytes_total'),
        gpuBytes: sum(ms, 'strata_expert_cache_bytes_moved_total'),
      };
      const dt = last ? (now - last.t) / 1000 : 0;
      const rate = (k) => (dt > 0 ? Math.max(0, c[k] - last[k]) / dt : 0);
      card('requests', 'API requests (errors, stopped early)', c.requests + ' (' + c.errors + ', ' + c.early + ')',
        rate('requests'));
      card('queue', 'waiting / slots busy of all', sum(ms, 'strata_queue_depth') + ' / ' +
        sum(ms, 'strata_busy_slots') + ' of ' + sum(ms, 'strata_slots'), sum(ms, 'strata_busy_slots'));
      card('prefill', 'prompt tokens/s', rate('prompt').toFixed(1), rate('prompt'));
      card('decode', 'generated tokens/s', rate('generated').toFixed(1), rate('generated'));
      card('cache', 'prompt cache hits', (c.prompt ? (100 * c.cached / c.prompt).toFixed(1) : '0') + ' % of ' +
        c.prompt + ' tokens', c.prompt ? c.cached / c.prompt : 0);
      if (has(ms, 'strata_expert_tier_accesses_total')) {
        const a = sum(ms, 'strata_expert_tier_accesses_total'), h = sum(ms, 'strata_expert_tier_hits_total');
        card('tier', 'RAM expert tier: hits, read from disk', (a ? (100 * h / a).toFixed(1) : '0') + ' %, ' +
          bytes(c.tierBytes), rate('tierBytes'));
      }
      if (has(ms, 'strata_expert_cache_accesses_total') && sum(ms, 'strata_device_gpu') > 0)
        card('gpu', 'GPU expert cache: hits, moved to VRAM',
          (100 * sum(ms, 'strata_expert_cache_hit_rate')).toFixed(1) + ' %, ' + bytes(c.gpuBytes), rate('gpuBytes'));
      if (has(ms, 'strata_process_resident_bytes')) {
        const rss = sum(ms, 'strata_process_resident_bytes');
        card('memory', 'server memory (resident)', bytes(rss), rss);
      }
      c.t = now;
      last = c;
      $('error').hidden = true;
      document.body.dataset.state = 'live';
    } catch (e) {
      $('error').textContent = 'cannot read /metrics: ' + e.message;
      $('error').hidden = false;
    }
  }
  poll();
  setInterval(poll, EVERY);
})();
