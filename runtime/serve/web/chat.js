// chat.js: the chat page of `strata serve` (/). Talks to this server's own
// OpenAI endpoint, streamed. Model text only ever becomes DOM text nodes
// (the markdown below builds elements and sets textContent; nothing is
// parsed as HTML), so a <script> or <img onerror> in an answer shows as text.
'use strict';
(() => {
  const $ = (id) => document.getElementById(id);
  const CHATS = 'strata.chats', CURRENT = 'strata.current', SETTINGS = 'strata.settings';
  let chats = load(CHATS, []);
  let current = localStorage.getItem(CURRENT);
  let model = null;                            // /v1/models' first entry
  let running = null;                          // the AbortController of the answer being streamed

  function load(k, d) { try { return JSON.parse(localStorage.getItem(k)) || d; } catch (e) { return d; } }
  function save() {
    localStorage.setItem(CHATS, JSON.stringify(chats));
    if (current) localStorage.setItem(CURRENT, current);
  }
  function el(tag, cls, text) {
    const e = document.createElement(tag);
    if (cls) e.className = cls;
    if (text !== undefined) e.textContent = text;
    return e;
  }
  const headers = () => window.strataKey.headers({ 'Content-Type': 'application/json' });
  function showError(msg) { $('error').textContent = msg; $('error').hidden = !msg; }
  function setState(s) { document.body.dataset.state = s; }

  const askKey = () => window.strataKey.ask(connect); // key.js: asked once, kept for the tab

  async function connect() {
    try {
      const r = await fetch('/v1/models', { headers: headers() });
      if (r.status === 401) { setState('key'); askKey(); return; }
      if (!r.ok) throw new Error((await errorText(r)) || r.statusText);
      model = (await r.json()).data[0];
      $('model').textContent = model.id + ' · context ' + model.context_length + ' tokens';
      showError('');
      setState('idle');
    } catch (e) {
      showError('cannot reach the server: ' + e.message);
      setTimeout(connect, 2000);             // the model may still be loading
    }
  }
  async function errorText(r) {
    try { const j = await r.json(); return j.error && j.error.message; } catch (e) { return ''; }
  }

  // ---- markdown, as DOM: fenced code, headings, lists, paragraphs; inline
  // code, bold, italic and http(s) links. Text nodes only.
  const INLINE = /(`[^`\n]+`)|(\*\*[^*\n]+\*\*)|(\*[^*\n]+\*)|\[([^\]\n]+)\]\((https?:\/\/[^)\s]+)\)/g;
  function inline(parent, text) {
    let at = 0, m;
    INLINE.lastIndex = 0;
    while ((m = INLINE.exec(text)) !== null) {
      if (m.index > at) parent.appendChild(document.createTextNode(text.slice(at, m.index)));
      if (m[1]) parent.appendChild(el('code', '', m[1].slice(1, -1)));
      else if (m[2]) parent.appendChild(el('strong', '', m[2].slice(2, -2)));
      else if (m[3]) parent.appendChild(el('em', '', m[3].slice(1, -1)));
      else {
        const a = el('a', '', m[4]);
        a.href = m[5];                          // the pattern admits http(s) only
        a.rel = 'noopener noreferrer';
        a.target = '_blank';
        parent.appendChild(a);
      }
      at = INLINE.lastIndex;
    }
    if (at < text.length) parent.appendChild(document.createTextNode(text.slice(at)));
  }
  function markdown(parent, text) {
    const lines = text.split('\n');
    let para = [], list = null;
    const flush = () => {
      if (para.length) { const p = el('p'); inline(p, para.join('\n')); parent.appendChild(p); para = []; }
    };
    for (let i = 0; i < lines.length; i++) {
      const ln = lines[i];
      const fence = /^\s*```\s*([\w+-]*)/.exec(ln);
      if (fence) {
        flush(); list = null;
        const body = [];
        for (i++; i < lines.length && !/^\s*```/.test(lines[i]); i++) body.push(lines[i]);
        const pre = el('pre'), code = el('code', '', body.join('\n'));
        if (fence[1]) code.dataset.lang = fence[1];
        pre.appendChild(code);
        parent.appendChild(pre);
        continue;
      }
      const h = /^(#{1,6})\s+(.*)$/.exec(ln);
      const item = /^\s*(?:[-*+]|(\d+)[.)])\s+(.*)$/.exec(ln);
      if (h) { flush(); list = null; const e = el('h' + Math.min(6, h[1].length + 2)); inline(e, h[2]); parent.appendChild(e); }
      else if (item) {
        flush();
        const kind = item[1] ? 'ol' : 'ul';
        if (!list || list.tagName.toLowerCase() !== kind) { list = el(kind); parent.appendChild(list); }
        const li = el('li'); inline(li, item[2]); list.appendChild(li);
      } else if (!ln.trim()) { flush(); list = null; }
      else { list = null; para.push(ln); }
    }
    flush();
  }

  // ---- conversations
  function chat() { return chats.find((c) => c.id === current); }
  function newChat() {
    const c = { id: String(Date.now()) + Math.random().toString(36).slice(2, 6), title: 'New chat', messages: [] };
    chats.unshift(c);
    current = c.id;
    save();
    renderAll();
  }
  function renderChats() {
    const ul = $('chats');
    ul.replaceChildren();
    for (const c of chats) {
      const li = el('li', c.id === current ? 'current' : '', c.title);
      li.addEventListener('click', () => { if (!running) { current = c.id; save(); renderAll(); } });
      ul.appendChild(li);
    }
  }
  function renderMessage(m) {
    const d = el('div', 'msg ' + m.role);
    d.appendChild(el('div', 'who', m.role === 'user' ? 'you' : (model ? model.id : 'assistant')));
    if (m.reasoning) {
      const det = el('details', 'reasoning');
      det.appendChild(el('summary', '', 'reasoning (' + m.reasoning.length + ' characters)'));
      det.appendChild(el('pre', '', m.reasoning));
      d.appendChild(det);
    }
    const body = el('div', 'body');
    markdown(body, m.content || '');
    d.appendChild(body);
    for (const t of m.tool_calls || []) {
      const tc = el('div', 'tool');
      tc.appendChild(el('span', 'muted', 'tool call '));
      tc.appendChild(el('code', '', (t.name || '?') + '(' + (t.arguments || '') + ')'));
      d.appendChild(tc);
    }
    if (m.stats) d.appendChild(el('div', 'stats', m.stats));
    return d;
  }
  function renderAll() {
    renderChats();
    const box = $('messages');
    box.replaceChildren();
    const c = chat();
    if (c) for (const m of c.messages) box.appendChild(renderMessage(m));
    box.scrollTop = box.scrollHeight;
  }
  let pending = false;                          // one repaint of the streamed answer a frame
  function renderLast() {
    if (pending) return;
    pending = true;
    requestAnimationFrame(() => {
      pending = false;
      const box = $('messages'), c = chat();
      if (!c || !box.lastElementChild) return;
      box.replaceChild(renderMessage(c.messages[c.messages.length - 1]), box.lastElementChild);
      box.scrollTop = box.scrollHeight;
    });
  }

  // ---- settings, kept in the browser
  const FIELDS = ['system', 'temperature', 'top_p', 'max_tokens'];
  function loadSettings() {
    const s = load(SETTINGS, {});
    for (const f of FIELDS) if (s[f] !== undefined) $(f).value = s[f];
  }
  function saveSettings() {
    const s = {};
    for (const f of FIELDS) s[f] = $(f).value;
    localStorage.setItem(SETTINGS, JSON.stringify(s));
  }
  for (const f of FIELDS) $(f).addEventListener('change', saveSettings);

  // ---- one answer, streamed
  async function send(text) {
    if (!chat()) newChat();
    const c = chat();
    if (!c.messages.length) c.title = text.slice(0, 40);
    c.messages.push({ role: 'user', content: text });
    const a = { role: 'assistant', content: '', reasoning: '', tool_calls: [] };
    c.messages.push(a);
    save();
    renderAll();
    const msgs = [];
    if ($('system').value.trim()) msgs.push({ role: 'system', content: $('system').value });
    for (const m of c.messages.slice(0, -1)) msgs.push({ role: m.role, content: m.content });
    const body = {
      model: model ? model.id : undefined, messages: msgs, stream: true, stream_options: { include_usage: true },
      temperature: Number($('temperature').value), top_p: Number($('top_p').value),
      max_tokens: Math.max(1, parseInt($('max_tokens').value, 10) || 512),
    };
    running = new AbortController();
    $('stop').disabled = false;
    $('send').disabled = true;
    setState('streaming');
    showError('');
    const t0 = performance.now();
    let tFirst = 0, chunks = 0, usage = null, ended = 'done';
    try {
      const r = await fetch('/v1/chat/completions', {
        method: 'POST', headers: headers(), body: JSON.stringify(body), signal: running.signal,
      });
      if (r.status === 401) { askKey(); throw new Error('the API key was refused'); }
      if (!r.ok) throw new Error((await errorText(r)) || r.statusText);
      const reader = r.body.getReader(), dec = new TextDecoder();
      let buf = '';
      for (;;) {
        const { value, done } = await reader.read();
        if (done) break;
        buf += dec.decode(value, { stream: true });
        let cut;
        while ((cut = buf.indexOf('\n\n')) >= 0) {
          const ev = buf.slice(0, cut);
          buf = buf.slice(cut + 2);
          for (const line of ev.split('\n')) {
            if (!line.startsWith('data: ')) continue;
            const data = line.slice(6);
            if (data === '[DONE]') continue;
            const j = JSON.parse(data);
            if (j.error) throw new Error(j.error.message);
            if (j.usage) usage = j.usage;
            const ch = j.choices && j.choices[0];
            if (!ch) continue;
            const d = ch.delta || {};
            if (d.content) { a.content += d.content; chunks++; if (!tFirst) tFirst = performance.now(); }
            if (d.reasoning_content) { a.reasoning += d.reasoning_content; if (!tFirst) tFirst = performance.now(); }
            for (const t of d.tool_calls || []) {
              const k = t.index || 0;
              a.tool_calls[k] = a.tool_calls[k] || { name: '', arguments: '' };
              if (t.function && t.function.name) a.tool_calls[k].name += t.function.name;
              if (t.function && t.function.arguments) a.tool_calls[k].arguments += t.function.arguments;
            }
            if (ch.finish_reason) a.finish = ch.finish_reason;
          }
        }
        renderLast();
      }
    } catch (e) {
      if (e.name === 'AbortError') ended = 'stopped';
      else { ended = 'error'; showError(e.message); }
    }
    const n = usage ? usage.completion_tokens : chunks;
    const secs = (performance.now() - (tFirst || t0)) / 1000;
    a.stats = n + ' tokens' + (secs > 0 && n > 1 ? ' · ' + (n / secs).toFixed(1) + ' tokens/s' : '') +
      (usage ? ' · prompt ' + usage.prompt_tokens : '') + (ended === 'stopped' ? ' · stopped' : '') +
      (a.finish === 'length' ? ' · cut at max tokens' : '');
    running = null;
    $('stop').disabled = true;
    $('send').disabled = false;
    save();
    renderAll();
    setState(ended === 'error' ? 'error' : ended === 'stopped' ? 'stopped' : 'done');
  }

  $('compose').addEventListener('submit', (ev) => {
    ev.preventDefault();
    const text = $('prompt').value.trim();
    if (!text || running) return;
    $('prompt').value = '';
    send(text);
  });
  $('prompt').addEventListener('keydown', (ev) => {
    if (ev.key === 'Enter' && !ev.shiftKey) { ev.preventDefault(); $('compose').requestSubmit(); }
  });
  $('stop').addEventListener('click', () => { if (running) running.abort(); });
  $('new').addEventListener('click', () => { if (!running) newChat(); });

  loadSettings();
  if (!chat()) current = chats.length ? chats[0].id : null;
  renderAll();
  connect();
})();
