/// The single page served at `GET /`: no build step, no external assets.
///
/// Plain HTML, CSS and JavaScript over `/api/v1` (docs/API.md): the token comes from the URL
/// fragment (`#token=...`, then kept in `localStorage` as `haul.token`), live updates from
/// `GET /api/v1/events` read with `fetch()` (an `EventSource` cannot send the `Authorization`
/// header). The list shows one page of at most 100 downloads, running and queued first
/// (`GET /api/v1/downloads?status=running,queued,failed,paused,completed&offset=N&limit=100`, with
/// `X-Total-Count` for the pager): events update the rows on the page in place, and a change of
/// status (and every 5 seconds) fetches the page again, so 10,000 downloads cost no more than 100.
///
/// Everything the daemon sends (URLs, file names, error messages) goes in with `textContent`.
/// Tests/WebUI/webui_test.py drives the page through its stable hooks: `tr[data-id][data-status]`,
/// `.bar[data-percent]`, `.conns[data-connections]`, `.error`, `button.pause/.resume/.remove`,
/// `#urls`, `#add`, `#pauseall`, `#resumeall`, `#concurrency`, `#limit`, `#apply`, `#filter`,
/// `#range[data-offset][data-total]`, `#prev`, `#next` and `#message`; the limits
/// (`WebPageLimits.swift`): `.rate[data-limit]`, `button.limit` and `#schedule`. The page and its style
/// sheet are here, its script in `WebPage+Script.swift`.
enum WebPage {
    static let html: String = #"""
        <!doctype html>
        <html lang="en">
        <head>
        <meta charset="utf-8">
        <meta name="viewport" content="width=device-width, initial-scale=1">
        <title>haul</title>
        <link rel="icon" href="data:,">
        <link rel="stylesheet" href="/haul.css">
        <script src="/haul-limits.js" defer></script>
        <script src="/haul.js" defer></script>
        </head>
        <body>
        <header><h1>haul</h1><span id="summary"></span></header>
        <main>
          <form id="tokenform" hidden>
            <input id="token" type="password" placeholder="API token (the secret in $HAUL_HOME/serve.json)" autocomplete="off">
            <button class="primary" type="submit">Use token</button>
          </form>
          <p id="message" role="status"></p>
          <form id="addform">
            <textarea id="urls" placeholder="One URL per line" spellcheck="false"></textarea>
            <button id="add" class="primary" type="submit">Add</button>
          </form>
          <div class="toolbar">
            <button id="pauseall" type="button">Pause all</button>
            <button id="resumeall" type="button">Resume all</button>
            <span class="spacer"></span>
            <form id="optionsform" novalidate>
              <label>Downloads at once<input id="concurrency" type="number" min="1" max="1000" step="1" inputmode="numeric"></label>
              <label>Speed limit<input id="limit" placeholder="none (e.g. 5M, 500K)" spellcheck="false" autocomplete="off"></label>
              <button id="apply" type="submit">Apply</button>
            </form>
            <span id="schedule"></span>
          </div>
          <div class="toolbar">
            <select id="filter" aria-label="Show">
              <option value="running,queued,failed,paused,completed">All downloads</option>
              <option value="running,queued">Running and queued</option>
              <option value="failed">Failed</option>
              <option value="paused">Paused</option>
              <option value="completed">Completed</option>
            </select>
            <span class="spacer"></span>
            <span id="range" data-offset="0" data-total="0"></span>
            <button id="prev" type="button" disabled>‹ Previous</button>
            <button id="next" type="button" disabled>Next ›</button>
          </div>
          <table>
            <thead><tr><th>Name</th><th>Status</th><th>Progress</th><th class="num">Size</th><th class="num">Speed</th><th class="num" title="Connections in use / the most this download may open">Conn.</th><th class="num">Left</th><th class="num" title="This download's own speed limit">Limit</th><th></th></tr></thead>
            <tbody id="rows"></tbody>
          </table>
          <div id="empty">No downloads yet.</div>
        </main>
        </body>
        </html>
        """#

    /// The page's style sheet, `GET /haul.css`: the Content-Security-Policy allows no inline style.
    static let css: String = #"""
          :root { --fg: #1d2330; --muted: #6b7385; --line: #e3e6ec; --bg: #f6f7f9; --accent: #2f6fe4; --ok: #1f9d55; --warn: #c98a06; --bad: #d64545; }
          * { box-sizing: border-box; }
          body { margin: 0; font: 14px/1.45 system-ui, -apple-system, "Segoe UI", sans-serif; color: var(--fg); background: var(--bg); }
          header { display: flex; align-items: baseline; gap: 16px; padding: 14px 24px; background: #fff; border-bottom: 1px solid var(--line); }
          h1 { margin: 0; font-size: 20px; letter-spacing: .5px; }
          main { max-width: 1200px; margin: 0 auto; padding: 16px 24px; }
          #summary { color: var(--muted); }
          #message { min-height: 1.45em; margin: 0 0 10px; color: var(--muted); word-break: break-word; }
          #message.error { color: var(--bad); font-weight: 600; }
          form { display: flex; gap: 10px; align-items: flex-start; margin-bottom: 16px; }
          textarea, input { flex: 1; font: 13px ui-monospace, monospace; padding: 8px; border: 1px solid var(--line); border-radius: 6px; background: #fff; }
          select { font: inherit; padding: 5px 8px; border: 1px solid var(--line); border-radius: 6px; background: #fff; }
          textarea { height: 64px; resize: vertical; }
          button { font: inherit; padding: 6px 12px; border: 1px solid var(--line); border-radius: 6px; background: #fff; cursor: pointer; }
          button:hover:enabled { border-color: var(--accent); color: var(--accent); }
          button:disabled { color: var(--muted); cursor: default; opacity: .6; }
          button.primary { background: var(--accent); border-color: var(--accent); color: #fff; padding: 8px 18px; }
          .toolbar { display: flex; flex-wrap: wrap; align-items: center; gap: 8px; margin-bottom: 12px; }
          .toolbar .spacer { flex: 1; }
          .toolbar form { margin: 0; align-items: center; gap: 8px; }
          .toolbar label { color: var(--muted); white-space: nowrap; }
          .toolbar input { flex: none; padding: 5px 8px; margin-left: 6px; }
          #concurrency { width: 6em; }
          #limit { width: 15em; }
          #schedule { color: var(--muted); font-size: 12px; }
          #range { color: var(--muted); font-variant-numeric: tabular-nums; }
          table { width: 100%; border-collapse: collapse; background: #fff; border: 1px solid var(--line); border-radius: 8px; overflow: hidden; }
          th, td { padding: 8px 10px; text-align: left; border-bottom: 1px solid var(--line); white-space: nowrap; }
          th { font-size: 12px; text-transform: uppercase; letter-spacing: .4px; color: var(--muted); background: #fafbfc; }
          td.name { white-space: normal; word-break: break-all; max-width: 360px; }
          td.name .error { display: block; color: var(--bad); word-break: break-word; }
          .num { text-align: right; font-variant-numeric: tabular-nums; }
          td.num { min-width: 6em; }
          td.size { min-width: 11em; }  /* steady columns from page to page */
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
        """#
}
