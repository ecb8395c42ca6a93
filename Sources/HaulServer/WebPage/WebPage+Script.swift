extension WebPage {
    /// The page's script, `GET /haul.js` (deferred: it runs once the document is parsed, as it
    /// did at the end of the body): the Content-Security-Policy allows no inline script.
    static let script: String = #"""
        'use strict';
        const el = id => document.getElementById(id);
        const PAGE = 100;
        const rows = new Map();  // id -> {d: the download as shown, tr: its row, at: the seq it reflects}; only this page's
        const view = { offset: 0, total: 0 };
        let token = null, seq = 0, refused = false, summaryTimer = null, options = null;

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

        // Returns {res, json}; a failure throws the API's own message ({"error": {"code", "message"}}).
        async function request(method, path, body) {
          const headers = { 'Authorization': 'Bearer ' + token };
          if (body !== undefined) headers['Content-Type'] = 'application/json';
          const res = await fetch(path, { method, headers, cache: 'no-store', body: body === undefined ? undefined : JSON.stringify(body) });
          let json = null;
          try { json = await res.json(); } catch (e) { /* not JSON */ }
          if (res.status === 401) askForToken('The token was refused: enter the one from serve.json.');
          if (!res.ok) throw new Error((json && json.error && json.error.message) || ('HTTP ' + res.status));
          return { res, json };
        }
        async function api(method, path, body) { return (await request(method, path, body)).json; }

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
        // Rates as `haul --limit-rate` spells them: bytes per second, K, M and G being 1024, 1024², 1024³.
        const UNITS = { '': 1, k: 1024, m: 1024 * 1024, g: 1024 * 1024 * 1024 };
        function rateText(n) {
          for (const u of ['G', 'M', 'K']) if (n % UNITS[u.toLowerCase()] === 0) return n / UNITS[u.toLowerCase()] + u;
          return String(n);
        }
        function parseRate(text) {
          text = text.trim();
          if (text === '' || /^none$/i.test(text)) return null;
          const m = text.match(/^(\d+(?:\.\d*)?|\.\d+)\s*(?:([kmg])(?:i?b)?|b)?(?:\/s)?$/i);
          if (!m) throw new Error('Speed limit: "' + text + '" is not a rate; use bytes per second such as 500000, 500K, 5M or 1.5M, or leave it empty for none.');
          const n = Math.floor(Number(m[1]) * UNITS[(m[2] || '').toLowerCase()]);
          if (n < 1) throw new Error('Speed limit: at least 1 byte per second; leave it empty for no limit.');
          return n;
        }

        // Rows
        function makeRow(id) {
          const tr = document.createElement('tr');
          tr.dataset.id = id;
          tr.innerHTML = '<td class="name"><span></span><small class="error"></small></td><td><span class="status"></span> <small class="host"></small></td>' +
            '<td><div class="progress"><div class="bar" data-percent="0"><i></i></div><span class="pct">0%</span></div></td>' +
            '<td class="num size"></td><td class="num speed"></td><td class="num conns" data-connections="0"></td><td class="num left"></td>' +
            '<td class="num rate" data-limit=""></td>' +
            '<td class="actions"><button class="limit" type="button">Limit</button><button class="pause" type="button">Pause</button><button class="resume" type="button">Resume</button>' +
            '<button class="newurl" type="button">New URL</button><button class="remove" type="button">Remove</button></td>';
          tr.querySelector('.pause').onclick = () => act(id, 'POST', '/pause');
          tr.querySelector('.resume').onclick = () => act(id, 'POST', '/resume');
          tr.querySelector('.remove').onclick = () => act(id, 'DELETE', '');
          tr.querySelector('.limit').onclick = () => askLimit(id);
          tr.querySelector('.newurl').onclick = () => {
            const url = prompt('A new URL for this download (its bytes are kept when it serves the same file):');
            if (url) act(id, 'PUT', '/urls', { urls: [url.trim()] });
          };
          return tr;
        }

        function render(r) {
          const d = r.d, tr = r.tr, p = percent(d), running = d.status === 'running';
          tr.dataset.status = d.status;
          tr.dataset.url = d.url;
          const name = tr.querySelector('.name span');
          name.textContent = d.fileName || d.url;
          name.title = d.url;
          const error = tr.querySelector('.error'), failed = d.status === 'failed' && d.error;
          error.textContent = failed ? d.error.message : '';
          error.title = failed ? d.error.code : '';
          tr.dataset.needsNewUrl = d.needsNewURL ? 'true' : 'false';
          tr.querySelector('.status').textContent = d.needsNewURL ? 'needs a new URL' : d.status;
          tr.querySelector('.host').textContent = running && d.host ? 'on ' + d.host : '';
          const bar = tr.querySelector('.bar');
          bar.dataset.percent = String(p);
          bar.firstChild.style.width = p + '%';
          tr.querySelector('.pct').textContent = p + '%';
          tr.querySelector('.size').textContent = d.totalLength == null && !d.completedLength ? '' : bytes(d.completedLength) + ' / ' + bytes(d.totalLength);
          tr.querySelector('.speed').textContent = running && d.speed > 0 ? bytes(d.speed) + '/s' : '';
          const conns = tr.querySelector('.conns'), live = running ? (d.connections || 0) : 0, most = d.maxConnections || 1;
          conns.dataset.connections = String(live);
          conns.textContent = running ? live + '/' + most : '';
          conns.title = running ? live + ' connection' + (live === 1 ? '' : 's') + ' of at most ' + most +
            (d.maxBytesPerSecond ? ', limited to ' + bytes(d.maxBytesPerSecond) + '/s' : '') : '';
          tr.querySelector('.left').textContent = running && d.speed > 0 && d.totalLength ? duration((d.totalLength - d.completedLength) / d.speed) : '';
          tr.querySelector('.pause').hidden = !(running || d.status === 'queued');
          tr.querySelector('.resume').hidden = !(d.status === 'paused' || (d.status === 'failed' && !d.needsNewURL));
          tr.querySelector('.newurl').hidden = !d.needsNewURL;
          showLimit(tr, d);
        }

        function drop(id) {
          const r = rows.get(id);
          if (r) { r.tr.remove(); rows.delete(id); }
        }

        // Freshness: every event gets the next `seq`; a row remembers the `seq` of what it shows (`at`).
        // An object from a request sent when `seq` was `since` is older than any event after `since`,
        // so those events' live fields win over it.
        const gone = new Set(), want = new Set(), busy = new Set();

        // Shows `d` in its row; only a page listing (`create`) adds rows.
        function merge(d, since, create) {
          if (!d || !d.id || gone.has(d.id)) return null;
          if (d.status === 'removed') { gone.add(d.id); drop(d.id); return null; }  // final, however old
          let r = rows.get(d.id);
          if (!r && !create) return null;
          if (r && r.at > since) {
            d = Object.assign({}, d, { status: r.d.status, completedLength: r.d.completedLength, speed: r.d.speed, connections: r.d.connections,
              totalLength: r.d.totalLength == null ? d.totalLength : r.d.totalLength });
          }
          if (!r) { r = { tr: makeRow(d.id), at: since }; rows.set(d.id, r); }
          r.d = d;
          r.at = Math.max(r.at, since);
          render(r);
          return r;
        }

        // Fetches one download on the page, again if more events for it arrive meanwhile, so the last
        // answer is never older than the last event.
        async function fetchOne(id) {
          want.add(id);
          if (busy.has(id)) return;
          busy.add(id);
          try {
            while (want.has(id)) {
              const since = seq;
              want.delete(id);
              merge(await api('GET', '/api/v1/downloads/' + encodeURIComponent(id)), since, false);
            }
          } catch (e) { /* the next event or page refresh fixes it */ }
          finally { busy.delete(id); want.delete(id); }
        }

        // The page: one request at a time; asked again meanwhile, it runs once more when done. Its
        // error stays shown until a load succeeds.
        let loading = null, again = false, refreshTimer = null, pageError = null;

        function refresh() {
          if (loading) { again = true; return loading; }
          loading = (async () => {
            try {
              do { again = false; await loadPage(); } while (again);
              if (pageError !== null && el('message').textContent === pageError) say('');
              pageError = null;
            } catch (e) { if (!refused) { pageError = e.message; say(e.message, true); } }
            finally { loading = null; }
          })();
          return loading;
        }

        function refreshSoon() {
          if (!refreshTimer) refreshTimer = setTimeout(() => { refreshTimer = null; refresh(); }, 400);
        }

        async function loadPage() {
          const since = seq, statuses = el('filter').value;
          const { res, json: list } = await request('GET', '/api/v1/downloads?status=' + statuses + '&offset=' + view.offset + '&limit=' + PAGE);
          const total = res.headers.get('X-Total-Count');
          // A daemon without paging sends no count: what it sent is the whole list.
          view.total = total == null ? view.offset + list.length : Number(total);
          if (view.offset > 0 && view.offset >= view.total) {  // the page emptied: show the last one there is
            view.offset = Math.max(0, Math.ceil(view.total / PAGE) - 1) * PAGE;
            return loadPage();
          }
          const seen = new Set(), tbody = el('rows');
          list.forEach(d => { seen.add(d.id); const r = merge(d, since, true); if (r) tbody.appendChild(r.tr); });
          for (const id of Array.from(rows.keys())) if (!seen.has(id)) drop(id);
          const range = el('range');
          range.dataset.offset = String(view.offset);
          range.dataset.total = String(view.total);
          range.textContent = list.length ? (view.offset + 1) + '–' + (view.offset + list.length) + ' of ' + view.total : '';
          el('prev').disabled = view.offset === 0;
          el('next').disabled = view.offset + list.length >= view.total;
          el('empty').hidden = rows.size > 0;
          el('empty').textContent = el('filter').selectedIndex === 0 ? 'No downloads yet.' : 'None.';
        }

        function turn(offset) {
          view.offset = Math.max(0, offset);
          refresh().then(() => window.scrollTo(0, 0));
        }

        async function act(id, method, suffix, body) {
          const since = seq;
          try { merge(await api(method, '/api/v1/downloads/' + encodeURIComponent(id) + suffix, body), since, false); say(''); }
          catch (e) { say(e.message, true); }
          refreshSoon();
        }

        async function all(action, done) {
          try {
            const answer = await api('POST', '/api/v1/' + action, { all: true });
            say(done + ' ' + answer.count + (answer.count === 1 ? ' download.' : ' downloads.'));
          } catch (e) { say(e.message, true); }
          refresh();
          summarySoon();
        }

        // Options
        function showOptions() {
          el('concurrency').value = String(options.maxConcurrentDownloads);
          el('limit').value = options.maxBytesPerSecond == null ? '' : rateText(options.maxBytesPerSecond);
          el('limit').title = options.maxBytesPerSecond == null ? 'No limit' : bytes(options.maxBytesPerSecond) + '/s for all downloads together';
          showSchedule();
        }

        async function loadOptions() {
          try { options = await api('GET', '/api/v1/options'); showOptions(); }
          catch (e) { if (!refused) say(e.message, true); }
        }

        // Sends only what differs from the options last read, so it undoes no one else's change.
        el('optionsform').onsubmit = async event => {
          event.preventDefault();
          const change = {};
          try {
            const text = el('concurrency').value.trim(), n = Number(text);
            if (text === '' || !Number.isInteger(n)) throw new Error('Downloads at once: enter a whole number from 1 to 1000.');
            if (!options || n !== options.maxConcurrentDownloads) change.maxConcurrentDownloads = n;
            const rate = parseRate(el('limit').value);
            if (!options || rate !== options.maxBytesPerSecond) change.maxBytesPerSecond = rate;
          } catch (e) { say(e.message, true); return; }
          if (Object.keys(change).length === 0) { say('Nothing to change.'); return; }
          try {
            options = await api('PATCH', '/api/v1/options', change);
            showOptions();
            say('Saved: ' + options.maxConcurrentDownloads + ' at once, ' +
              (options.maxBytesPerSecond == null ? 'no speed limit.' : 'at most ' + bytes(options.maxBytesPerSecond) + '/s.'));
          } catch (e) { say(e.message, true); }
          summarySoon();
        };

        // Events
        function apply(type, data) {
          let e;
          try { e = JSON.parse(data); } catch (err) { return; }
          if (!e || !e.id) return;
          const at = ++seq;
          type = type || e.type;
          if (type !== 'progress') { refreshSoon(); summarySoon(); }  // rows may join, leave or move
          if (e.status === 'removed') { gone.add(e.id); drop(e.id); return; }
          gone.delete(e.id);
          const r = rows.get(e.id);
          if (!r) return;  // not on this page
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
          if (!d.fileName) fetchOne(e.id);  // events carry no file name
        }

        const LOST = 'Lost the connection to the daemon; reconnecting…';

        async function listen() {
          for (;;) {
            try {
              const res = await fetch('/api/v1/events', { headers: { 'Authorization': 'Bearer ' + token }, cache: 'no-store' });
              if (res.status === 401) { askForToken('The token was refused: enter the one from serve.json.'); return; }
              if (!res.ok || !res.body) throw new Error('events: HTTP ' + res.status);
              if (el('message').textContent === LOST) say('');
              refresh();
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

        function summarySoon() {  // once for a burst of events, however long it lasts
          if (!summaryTimer) summaryTimer = setTimeout(() => { summaryTimer = null; summary(); }, 300);
        }

        el('addform').onsubmit = async event => {
          event.preventDefault();
          const urls = el('urls').value.split('\n').map(s => s.trim()).filter(Boolean);
          if (!urls.length) { say('Enter at least one URL.', true); return; }
          try {
            const added = await api('POST', '/api/v1/downloads', urls.map(url => ({ url })));
            added.forEach(d => gone.delete(d.id));
            el('urls').value = '';
            say('Added ' + added.length + (added.length === 1 ? ' download.' : ' downloads.'));
          } catch (e) { say(e.message, true); }
          refresh();
        };

        el('urls').onkeydown = event => {
          if (event.key === 'Enter' && (event.ctrlKey || event.metaKey)) el('add').click();
        };
        el('pauseall').onclick = () => all('pause', 'Paused');
        el('resumeall').onclick = () => all('resume', 'Resumed');
        el('prev').onclick = () => turn(view.offset - PAGE);
        el('next').onclick = () => turn(view.offset + PAGE);
        el('filter').onchange = () => turn(0);

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
          loadOptions();
          summary();
          setInterval(summary, 2000);
          // Every 5 s; every second in a fleet, where other hosts' progress arrives only this way.
          let ticks = 0;
          setInterval(() => {
            ticks += 1;
            const fleet = [...rows.values()].some(r => r.d.host);
            if (!refused && (fleet || ticks % 5 === 0)) refresh();
          }, 1000);
        })();
        """#
}
