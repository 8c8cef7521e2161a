/** The page's markup: static, no data in it; app.js fills it from the API. */
export const PAGE_HTML = `<!doctype html>
<html lang="en">
<head>
<meta charset="utf-8">
<meta name="viewport" content="width=device-width, initial-scale=1">
<title>idemkey inspector</title>
<link rel="icon" href="data:,">
<link rel="stylesheet" href="/app.css">
<script src="/app.js" defer></script>
</head>
<body>
<header>
  <h1>idemkey <span>inspector</span></h1>
  <span id="store" class="muted"></span>
  <span id="live" class="live off" title="live updates">connecting…</span>
  <span class="spacer"></span>
  <span id="ro" class="badge" hidden>read-only</span>
  <label class="who" id="who">acting as <input id="by" size="12" autocomplete="off" spellcheck="false"></label>
</header>
<nav id="counts" class="counts" aria-label="calls per state"></nav>
<section class="filters">
  <label>Task <select id="f-task"><option value="">all tasks</option></select></label>
  <label>Tool <select id="f-tool"><option value="">all tools</option></select></label>
  <label>State <select id="f-state"><option value="">all states</option></select></label>
  <button type="button" id="f-clear">Clear filters</button>
  <span id="notice" class="muted"></span>
</section>
<main>
  <section class="list">
    <table id="calls">
      <thead><tr><th>Task</th><th>Tool</th><th>Key</th><th>State</th><th class="num">Attempts</th><th>Lease</th>
      <th>Started</th><th class="num">Took</th><th>Actions</th></tr></thead>
      <tbody></tbody>
    </table>
    <p id="empty" class="muted" hidden>No calls match.</p>
    <div class="pager"><button type="button" id="prev">‹ Newer</button><span id="page" class="muted"></span>
    <button type="button" id="next">Older ›</button></div>
    <section id="keys-panel" hidden>
      <h2>Owner keys <span id="keys-note" class="muted"></span></h2>
      <p class="muted">Recorded by the HTTP middleware, mcpDedupe and idemkey gateway in this store.</p>
      <table id="keys">
        <thead><tr><th>Kind</th><th>Scope</th><th>Key</th><th>State</th><th>Tool or request</th><th>Answer</th>
        <th>Started</th></tr></thead>
        <tbody></tbody>
      </table>
    </section>
  </section>
  <aside id="side">
    <p id="hint" class="muted">Select a call to see its arguments, result and audit trail, and its task's timeline.</p>
    <section id="timeline-panel" hidden>
      <h2>Timeline of <span id="tl-task"></span></h2>
      <div id="timeline"></div>
      <div id="legend" class="legend"></div>
    </section>
    <section id="detail-panel" hidden>
      <h2>Call</h2>
      <div id="detail"></div>
    </section>
  </aside>
</main>
<dialog id="dlg">
  <h3 id="dlg-title"></h3>
  <div id="dlg-body"></div>
  <p id="dlg-error" class="error" hidden></p>
  <div class="dlg-buttons" id="dlg-buttons"></div>
</dialog>
<div id="toast" role="status" aria-live="polite"></div>
</body>
</html>
`;
