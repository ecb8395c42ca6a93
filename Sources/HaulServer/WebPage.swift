/// The single page served at `GET /`: no build step, no external assets.
///
/// Plain HTML, CSS and JavaScript over `/api/v1` (docs/API.md): the token comes from the URL
/// fragment (`#token=...`, then kept in `localStorage` as `haul.token`), the list from
/// `GET /api/v1/downloads`, live updates from `GET /api/v1/events` read with `fetch()` (an
/// `EventSource` cannot send the `Authorization` header). Tests/WebUI/webui_test.py drives it through
/// its stable hooks: `tr[data-id][data-status]`, `.bar[data-percent]`, `.conns[data-connections]`,
/// `button.pause/.resume/.remove`, `#urls`, `#add` and `#message`.
enum WebPage {
    static let html: String = #"""
    <!doctype html>
    <html lang="en">
    <head>
    <meta charset="utf-8">
    <meta name="viewport" content="width=device-width, initial-scale=1">
    <title>haul</title>
    <link rel="icon" href="data:,">
    <style>
      :root { --fg: #1d2330; --muted: #6b7385; --line: #e3e6ec; --bg: #f6f7f9; --accent: #2f6fe4; --ok: #1f9d55; --warn: #c98a06; --bad: #d64545; }
      * { box-sizing: border-box; }
      body { margin: 0; font: 14px/1.45 system-ui, -apple-system, "Segoe UI", sans-serif; color: var(--fg); background: var(--bg); }
      header { display: flex; align-items: baseline; gap: 16px; padding: 14px 24px; background: #fff; border-bottom: 1px solid var(--line); }
      h1 { margin: 0; font-size: 20px; letter-spacing: .5px; }
      main { max-width: 1200px; margin: 0 auto; padding: 16px 24px; }
      #summary { color: var(--muted); }
      #message { min-height: 1.45em; margin: 0 0 10px; color: var(--muted); }
      #message.error { color: var(--bad); font-weight: 600; }
      form { display: flex; gap: 10px; align-items: flex-start; margin-bottom: 16px; }
      textarea, input { flex: 1; font: 13px ui-monospace, monospace; padding: 8px; border: 1px solid var(--line); border-radius: 6px; background: #fff; }
      textarea { height: 64px; resize: vertical; }
      button { font: inherit; padding: 6px 12px; border: 1px solid var(--line); border-radius: 6px; background: #fff; cursor: pointer; }
      button:hover { border-color: var(--accent); color: var(--accent); }
      button.primary { background: var(--accent); border-color: var(--accent); color: #fff; padding: 8px 18px; }
      table { width: 100%; border-collapse: collapse; background: #fff; border: 1px solid var(--line); border-radius: 8px; overflow: hidden; }
      th, td { padding: 8px 10px; text-align: left; border-bottom: 1px solid var(--line); white-space: nowrap; }
      th { font-size: 12px; text-transform: uppercase; letter-spacing: .4px; color: var(--muted); background: #fafbfc; }
      td.name { white-space: normal; word-break: break-all; max-width: 360px; }
      td.name small { display: block; color: var(--bad); }
      .num { text-align: right; font-variant-numeric: tabular-nums; }
      td.num { min-width: 6em; }
      td.actions { text-align: right; }
      td.actions button { padding: 3px 9px; font-size: 12px; margin-left: 4px; }
      .status { display: inline-block; padding: 1px 8px; border-radius: 10px; font-size: 12px; background: var(--line); }
      [data-status=running] .status { background: #dfe9fc; color: var(--accent); }
      [data-status=completed] .status { background: #dcf2e5; color: var(--ok); }
      [data-status=paused] .status { background: #fbefd2; color: var(--warn); }
      [data-status=failed] .status { background: #fadede; color: var(--bad); }
      .progress { display: flex; align-items: center; gap: 8px; min-width: 200px; }
      .bar { flex: 1; height: 8px; border-radius: 4px; background: var(--line); overflow: hidden; }
      .bar i { display: block; height: 100%; width: 0; background: var(--accent); transition: width .3s; }
      [data-status=completed] .bar i { background: var(--ok); }
      [data-status=paused] .bar i { background: var(--warn); }
      [data-status=failed] .bar i { background: var(--bad); }
      .pct { width: 3.5em; text-align: right; font-variant-numeric: tabular-nums; color: var(--muted); }
      #empty { padding: 24px; text-align: center; color: var(--muted); }
      [hidden] { display: none !important; }
    </style>
    </head>
    <body>
    <header><h1>haul</h1><span id="summary"></span></header>
    <main>
      <form id="tokenform" hidden>
        <input id="token" type="password" placeholder="API token (the secret in $HAUL_HOME/serve.json)" autocomplete="off">
        <button class="primary" type="submit">Use token</button>
      </form>
      <p id="message"></p>
      <form id="addform">
        <textarea id="urls" placeholder="One URL per line" spellcheck="false"></textarea>
        <button id="add" class="primary" type="submit">Add</button>
      </form>
      <table>
        <thead><tr><th>Name</th><th>Status</th><th>Progress</th><th class="num">Size</th><th class="num">Speed</th><th class="num" title="Connections in use (of the most this download may open)">Conn.</th><th class="num">Left</th><th></th></tr></thead>
        <tbody id="rows"></tbody>
      </table>
      <div id="empty">No downloads yet.</div>
    </main>
    <script>
    'use strict';
    const el = id => document.getElementById(id);
    const rows = new Map();  // id -> {d: the download as shown, tr: its row, at: the seq it reflects}
    let token = null, seq = 0, refused = false, summaryTimer = null;

    function say(text, isError) {
      el('message').textContent = text || '';
      el('message').className = isError ? 'error' : '';
    }

    function askForToken(text) {
      refused = true;
      el('tokenform').hidden = false;
      el('token').focus();
      say(text, true);
    }

    async function api(method, path, body) {
      const headers = { 'Authorization': 'Bearer ' + token };
      if (body !== undefined) headers['Content-Type'] = 'application/json';
      const res = await fetch(path, { method, headers, cache: 'no-store', body: body === undefined ? undefined : JSON.stringify(body) });
      let json = null;
      try { json = await res.json(); } catch (e) { /* not JSON */ }
      if (res.status === 401) askForToken('The token was refused: enter the one from serve.json.');
      if (!res.ok) throw new Error((json && json.error && json.error.message) || ('HTTP ' + res.status));
      return json;
    }

    // Formatting
    function bytes(n) {
      if (n == null) return '?';
      const units = ['B', 'KiB', 'MiB', 'GiB', 'TiB'];
      let i = 0;
      while (n >= 1024 && i < units.length - 1) { n /= 1024; i++; }
      return (i === 0 ? n : n.toFixed(n < 10 ? 2 : 1)) + ' ' + units[i];
    }
    function duration(s) {
      if (!isFinite(s) || s < 0) return '';
      s = Math.round(s);
      if (s < 60) return s + ' s';
      if (s < 3600) return Math.floor(s / 60) + ' min ' + (s % 60) + ' s';
      return Math.floor(s / 3600) + ' h ' + Math.floor(s % 3600 / 60) + ' min';
    }
    function percent(d) {
      if (d.status === 'completed') return 100;
      if (!d.totalLength) return 0;
      return Math.max(0, Math.min(100, Math.floor(d.completedLength * 100 / d.totalLength)));
    }

    // Rows
    function makeRow(id) {
      const tr = document.createElement('tr');
      tr.dataset.id = id;
      tr.innerHTML = '<td class="name"><span></span><small></small></td><td><span class="status"></span></td>' +
        '<td><div class="progress"><div class="bar" data-percent="0"><i></i></div><span class="pct">0%</span></div></td>' +
        '<td class="num size"></td><td class="num speed"></td><td class="num conns" data-connections="0"></td><td class="num left"></td>' +
        '<td class="actions"><button class="pause" type="button">Pause</button><button class="resume" type="button">Resume</button>' +
        '<button class="remove" type="button">Remove</button></td>';
      tr.querySelector('.pause').onclick = () => act(id, 'POST', '/pause');
      tr.querySelector('.resume').onclick = () => act(id, 'POST', '/resume');
      tr.querySelector('.remove').onclick = () => act(id, 'DELETE', '');
      el('rows').appendChild(tr);
      return tr;
    }

    function render(r) {
      const d = r.d, tr = r.tr, p = percent(d), running = d.status === 'running';
      tr.dataset.status = d.status;
      tr.dataset.url = d.url;
      const name = tr.querySelector('.name span');
      name.textContent = d.fileName || d.url;
      name.title = d.url;
      tr.querySelector('.name small').textContent = d.status === 'failed' && d.error ? d.error.message : '';
      tr.querySelector('.status').textContent = d.status;
      const bar = tr.querySelector('.bar');
      bar.dataset.percent = String(p);
      bar.firstChild.style.width = p + '%';
      tr.querySelector('.pct').textContent = p + '%';
      tr.querySelector('.size').textContent = d.totalLength == null && !d.completedLength ? '' : bytes(d.completedLength) + ' / ' + bytes(d.totalLength);
      tr.querySelector('.speed').textContent = running && d.speed > 0 ? bytes(d.speed) + '/s' : '';
      const conns = tr.querySelector('.conns'), live = running ? (d.connections || 0) : 0;
      conns.dataset.connections = String(live);
      conns.textContent = running ? live + (d.maxConnections > 1 ? ' / ' + d.maxConnections : '') : '';
      conns.title = running ? live + ' connection' + (live === 1 ? '' : 's') + ' of at most ' + (d.maxConnections || 1) +
        (d.maxBytesPerSecond ? ', limited to ' + bytes(d.maxBytesPerSecond) + '/s' : '') : '';
      tr.querySelector('.left').textContent = running && d.speed > 0 && d.totalLength ? duration((d.totalLength - d.completedLength) / d.speed) : '';
      tr.querySelector('.pause').hidden = !(running || d.status === 'queued');
      tr.querySelector('.resume').hidden = !(d.status === 'paused' || d.status === 'failed');
      el('empty').hidden = rows.size > 0;
    }

    function drop(id) {
      const r = rows.get(id);
      if (r) { r.tr.remove(); rows.delete(id); }
      el('empty').hidden = rows.size > 0;
    }

    // Freshness: every event gets the next `seq`; a row remembers the `seq` of what it shows (`at`).
    // An object from a request sent when `seq` was `since` is older than any event after `since`,
    // so those events' live fields win over it.
    const gone = new Set(), want = new Set(), busy = new Set();

    function merge(d, since) {
      if (!d || !d.id || gone.has(d.id)) return;
      if (d.status === 'removed') { gone.add(d.id); drop(d.id); return; }  // final, however old
      let r = rows.get(d.id);
      if (r && r.at > since) {
        d = Object.assign({}, d, { status: r.d.status, completedLength: r.d.completedLength, speed: r.d.speed, connections: r.d.connections,
          totalLength: r.d.totalLength == null ? d.totalLength : r.d.totalLength });
      }
      if (!r) { r = { tr: makeRow(d.id), at: since }; rows.set(d.id, r); }
      r.d = d;
      r.at = Math.max(r.at, since);
      render(r);
    }

    // Fetches one download, again if more events for it arrive meanwhile, so the last answer is
    // never older than the last event.
    async function fetchOne(id) {
      want.add(id);
      if (busy.has(id)) return;
      busy.add(id);
      try {
        while (want.has(id)) {
          const since = seq;
          want.delete(id);
          merge(await api('GET', '/api/v1/downloads/' + encodeURIComponent(id)), since);
        }
      } catch (e) { /* the next event or list refresh fixes it */ }
      finally { busy.delete(id); want.delete(id); }
    }

    async function refresh() {
      const since = seq;
      const list = await api('GET', '/api/v1/downloads');
      const seen = new Set(list.map(d => d.id));
      for (const [id, r] of rows) if (!seen.has(id) && r.at <= since) drop(id);
      list.forEach(d => { merge(d, since); const r = rows.get(d.id); if (r) el('rows').appendChild(r.tr); });
    }

    async function act(id, method, suffix) {
      const since = seq;
      try { merge(await api(method, '/api/v1/downloads/' + encodeURIComponent(id) + suffix), since); say(''); }
      catch (e) { say(e.message, true); }
    }

    // Events
    function apply(type, data) {
      let e;
      try { e = JSON.parse(data); } catch (err) { return; }
      if (!e || !e.id) return;
      const at = ++seq;
      if (e.status === 'removed') { gone.add(e.id); drop(e.id); summarySoon(); return; }
      gone.delete(e.id);
      const r = rows.get(e.id);
      if (!r) { fetchOne(e.id); summarySoon(); return; }
      r.at = at;
      const d = r.d;
      d.status = e.status;
      if (e.completedLength != null) d.completedLength = e.completedLength;
      if (e.totalLength != null) d.totalLength = e.totalLength;
      d.speed = e.speed != null ? e.speed : (e.status === 'running' ? d.speed : 0);
      d.connections = e.connections != null ? e.connections : (e.status === 'running' ? d.connections : 0);
      if (e.maxConnections != null) { d.maxConnections = e.maxConnections; d.maxBytesPerSecond = e.maxBytesPerSecond; }
      if (e.error) d.error = e.error;
      if (e.path && !d.fileName) d.fileName = e.path.split('/').pop();
      render(r);
      // Events carry no file name and no final byte count: ask for the whole object when it changes.
      if ((type || e.type) !== 'progress' || !d.fileName) fetchOne(e.id);
      if ((type || e.type) !== 'progress') summarySoon();
    }

    const LOST = 'Lost the connection to the daemon; reconnecting…';

    async function listen() {
      for (;;) {
        try {
          const res = await fetch('/api/v1/events', { headers: { 'Authorization': 'Bearer ' + token }, cache: 'no-store' });
          if (res.status === 401) { askForToken('The token was refused: enter the one from serve.json.'); return; }
          if (!res.ok || !res.body) throw new Error('events: HTTP ' + res.status);
          if (el('message').textContent === LOST) say('');
          refresh().catch(e => say(e.message, true));
          const reader = res.body.getReader(), decoder = new TextDecoder();
          let buffer = '', type = '', data = [];
          for (;;) {
            const { value, done } = await reader.read();
            if (done) break;
            buffer += decoder.decode(value, { stream: true });
            let nl;
            while ((nl = buffer.indexOf('\n')) >= 0) {
              const line = buffer.slice(0, nl).replace(/\r$/, '');
              buffer = buffer.slice(nl + 1);
              if (line === '') {
                if (data.length) apply(type, data.join('\n'));
                type = ''; data = [];
              } else if (line[0] !== ':') {
                const colon = line.indexOf(':');
                const field = colon < 0 ? line : line.slice(0, colon);
                let value = colon < 0 ? '' : line.slice(colon + 1);
                if (value[0] === ' ') value = value.slice(1);
                if (field === 'event') type = value;
                else if (field === 'data') data.push(value);
              }
            }
          }
        } catch (e) { /* reconnect below */ }
        say(LOST, true);
        await new Promise(resolve => setTimeout(resolve, 1000));
      }
    }

    async function summary() {
      if (refused) return;
      try {
        const s = await api('GET', '/api/v1/summary');
        const c = s.counts || {};
        const parts = ['running', 'queued', 'paused', 'completed', 'failed'].filter(k => c[k]).map(k => c[k] + ' ' + k);
        el('summary').textContent = (parts.join(' · ') || 'nothing queued') + ' — ' + bytes(s.downloadSpeed || 0) + '/s';
      } catch (e) { if (!refused) el('summary').textContent = 'daemon unreachable'; }
    }

    function summarySoon() {
      clearTimeout(summaryTimer);
      summaryTimer = setTimeout(summary, 300);
    }

    el('addform').onsubmit = async event => {
      event.preventDefault();
      const urls = el('urls').value.split('\n').map(s => s.trim()).filter(Boolean);
      if (!urls.length) { say('Enter at least one URL.', true); return; }
      const since = seq;
      try {
        const added = await api('POST', '/api/v1/downloads', urls.map(url => ({ url })));
        added.forEach(d => { gone.delete(d.id); merge(d, since); });
        el('urls').value = '';
        say('Added ' + added.length + (added.length === 1 ? ' download.' : ' downloads.'));
      } catch (e) { say(e.message, true); }
    };

    el('urls').onkeydown = event => {
      if (event.key === 'Enter' && (event.ctrlKey || event.metaKey)) el('add').click();
    };

    el('tokenform').onsubmit = event => {
      event.preventDefault();
      const value = el('token').value.trim();
      if (!value) return;
      localStorage.setItem('haul.token', value);
      location.reload();
    };

    (function start() {
      const match = location.hash.match(/token=([^&]+)/);
      if (match) {
        localStorage.setItem('haul.token', decodeURIComponent(match[1]));
        history.replaceState(null, '', location.pathname + location.search);
      }
      token = localStorage.getItem('haul.token');
      if (!token) { askForToken('Enter the API token to continue.'); return; }
      listen();
      summary();
      setInterval(summary, 2000);
    })();
    </script>
    </body>
    </html>
    """#
}
