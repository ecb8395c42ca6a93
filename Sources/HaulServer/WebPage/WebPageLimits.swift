/// The web page's speed limits, `GET /haul-limits.js`, loaded before `/haul.js` (which calls
/// these functions and owns `el`, `rows`, `options`, `bytes`, `rateText`, `parseRate`, `say` and
/// `act`): each download's own limit in its row (`.rate[data-limit]`, empty for none) with a
/// `Limit` button that changes it (`PATCH /api/v1/downloads/ID`; a running download changes at
/// once), and the global limit's schedule beside the global limit (`#schedule`).
enum WebPageLimits {
    static let script: String = #"""
        'use strict';
        // A download's own limit, in its row; the button while it runs, waits or is paused.
        function showLimit(tr, d) {
          const cell = tr.querySelector('.rate'), limit = d.maxBytesPerSecond;
          cell.dataset.limit = limit == null ? '' : String(limit);
          cell.textContent = limit == null ? '' : bytes(limit) + '/s';
          cell.title = limit == null ? 'No limit of its own' : 'At most ' + bytes(limit) + '/s for this download';
          tr.querySelector('.limit').hidden = !['running', 'queued', 'paused'].includes(d.status);
        }

        function askLimit(id) {
          const r = rows.get(id), current = r && r.d.maxBytesPerSecond != null ? rateText(r.d.maxBytesPerSecond) : '';
          const text = prompt('Speed limit for this download (such as 500K or 2M; empty for none). A running download changes at once.', current);
          if (text === null) return;
          let rate;
          try { rate = parseRate(text); } catch (e) { say(e.message, true); return; }
          act(id, 'PATCH', '', { maxBytesPerSecond: rate });
        }

        // haul serve --limit-schedule: it sets the global limit at each of its boundaries.
        function showSchedule() {
          const s = el('schedule'), schedule = options && options.limitSchedule;
          s.textContent = schedule ? 'Schedule: ' + schedule : '';
          s.title = schedule ? 'Set by haul serve --limit-schedule at each boundary (local time of the daemon); a limit set here holds until the next one.' : '';
        }
        """#
}
