/** The page's styles: system fonts, no images, light and dark. */
export const PAGE_CSS = `
:root { --bg: #f7f7f5; --panel: #fff; --ink: #1d2125; --muted: #6b7280; --line: #e3e3df; --accent: #2456d6;
  --pending: #2f6fde; --completed: #1f9d55; --awaiting_approval: #d98a00; --approved: #0f9ba8; --denied: #d64545;
  --outcome_unknown: #8b5cf6; --takeover: #e0661b; font: 13px/1.45 system-ui, -apple-system, "Segoe UI", sans-serif; }
@media (prefers-color-scheme: dark) { :root { --bg: #15171a; --panel: #1e2125; --ink: #e6e6e3; --muted: #9aa0a8;
  --line: #33373d; --accent: #7aa2ff; } }
* { box-sizing: border-box; }
body { margin: 0; background: var(--bg); color: var(--ink); }
header { display: flex; align-items: center; gap: 14px; padding: 10px 18px; background: var(--panel);
  border-bottom: 1px solid var(--line); }
h1 { font-size: 16px; margin: 0; letter-spacing: .2px; } h1 span { font-weight: 400; color: var(--muted); }
h2 { font-size: 13px; margin: 0 0 8px; text-transform: uppercase; letter-spacing: .5px; color: var(--muted); }
h2 span { text-transform: none; letter-spacing: 0; color: var(--ink); font-family: ui-monospace, monospace; }
h3 { margin: 0 0 10px; font-size: 15px; }
.spacer { flex: 1; }
.muted { color: var(--muted); }
.mono, code, pre { font-family: ui-monospace, "SFMono-Regular", Menlo, Consolas, monospace; font-size: 12px; }
.live::before { content: ""; display: inline-block; width: 8px; height: 8px; border-radius: 50%; margin-right: 6px;
  background: var(--completed); vertical-align: 0; }
.live.off::before { background: var(--muted); }
.badge { border: 1px solid var(--line); border-radius: 10px; padding: 1px 8px; color: var(--muted); }
.who input { font: inherit; padding: 3px 6px; border: 1px solid var(--line); border-radius: 4px; background: var(--bg);
  color: var(--ink); }
.counts { display: flex; gap: 10px; padding: 12px 18px 4px; flex-wrap: wrap; }
.count { display: flex; flex-direction: column; min-width: 118px; padding: 8px 12px; border-radius: 8px; cursor: pointer;
  background: var(--panel); border: 1px solid var(--line); border-left: 4px solid var(--c, var(--line)); text-align: left;
  font: inherit; color: inherit; }
.count b { font-size: 22px; line-height: 1.1; }
.count span { color: var(--muted); }
.count.on { outline: 2px solid var(--accent); outline-offset: -1px; }
.filters { display: flex; gap: 14px; align-items: center; padding: 8px 18px; flex-wrap: wrap; }
select, button, textarea, input { font: inherit; color: inherit; }
select { padding: 3px 6px; border: 1px solid var(--line); border-radius: 4px; background: var(--panel); max-width: 220px; }
button { padding: 3px 10px; border: 1px solid var(--line); border-radius: 4px; background: var(--panel); cursor: pointer; }
button:hover { border-color: var(--accent); }
button:disabled { opacity: .45; cursor: default; }
button.primary { background: var(--accent); border-color: var(--accent); color: #fff; }
button.danger { color: var(--denied); }
main { display: flex; gap: 16px; padding: 4px 18px 24px; align-items: flex-start; }
.list { flex: 1 1 auto; min-width: 0; overflow-x: auto; background: var(--panel); border: 1px solid var(--line);
  border-radius: 8px; }
aside { flex: 0 0 430px; min-width: 0; display: flex; flex-direction: column; gap: 16px; }
@media (max-width: 1100px) { main { flex-direction: column; align-items: stretch; } aside { flex: none; } }
aside > section, #hint { background: var(--panel); border: 1px solid var(--line); border-radius: 8px; padding: 12px 14px; margin: 0; }
table { width: 100%; border-collapse: collapse; }
th { text-align: left; font-weight: 600; color: var(--muted); padding: 8px 6px; border-bottom: 1px solid var(--line);
  white-space: nowrap; }
td { padding: 6px 6px; border-bottom: 1px solid var(--line); white-space: nowrap; vertical-align: middle; }
td.task { max-width: 120px; overflow: hidden; text-overflow: ellipsis; }
.num { text-align: right; }
tbody tr { cursor: pointer; }
tbody tr:hover { background: color-mix(in srgb, var(--accent) 6%, transparent); }
tbody tr.sel { background: color-mix(in srgb, var(--accent) 12%, transparent); }
.state { display: inline-block; padding: 1px 8px; border-radius: 10px; font-size: 12px; color: #fff;
  background: var(--c, var(--muted)); }
.key { display: inline-flex; gap: 4px; align-items: center; }
.copy { padding: 1px 3px; line-height: 0; color: var(--muted); }
.copy svg { width: 12px; height: 12px; fill: none; stroke: currentColor; stroke-width: 1.6; }
td .act { padding: 1px 7px; margin-right: 3px; }
.pager { display: flex; gap: 10px; align-items: center; justify-content: flex-end; padding: 8px; }
dl { display: grid; grid-template-columns: max-content 1fr; gap: 3px 12px; margin: 0 0 10px; }
dt { color: var(--muted); } dd { margin: 0; min-width: 0; overflow-wrap: anywhere; }
pre { margin: 4px 0 10px; padding: 8px 10px; background: var(--bg); border: 1px solid var(--line); border-radius: 6px;
  max-height: 220px; overflow: auto; white-space: pre-wrap; overflow-wrap: anywhere; }
h4 { margin: 10px 0 2px; font-size: 12px; color: var(--muted); font-weight: 600; }
ol.events { margin: 4px 0 0; padding-left: 18px; } ol.events li { margin: 2px 0; }
#timeline svg { display: block; width: 100%; height: auto; }
#timeline text { font: 11px system-ui, sans-serif; fill: var(--ink); }
#timeline .axis text { fill: var(--muted); }
#timeline .grid { stroke: var(--line); }
#timeline .row:hover .bar { filter: brightness(1.1); }
#timeline .sel .bar { stroke: var(--ink); stroke-width: 1.5; }
.legend { display: flex; flex-wrap: wrap; gap: 4px 12px; margin-top: 8px; color: var(--muted); font-size: 12px; }
.legend i { display: inline-block; width: 10px; height: 10px; border-radius: 2px; margin-right: 4px; vertical-align: -1px;
  background: var(--c); }
dialog { border: 1px solid var(--line); border-radius: 10px; padding: 18px; width: min(560px, 92vw); background: var(--panel);
  color: var(--ink); }
dialog::backdrop { background: rgba(0,0,0,.35); }
dialog textarea { width: 100%; min-height: 90px; padding: 6px; border: 1px solid var(--line); border-radius: 4px;
  background: var(--bg); font-family: ui-monospace, monospace; font-size: 12px; }
.dlg-buttons { display: flex; gap: 8px; justify-content: flex-end; margin-top: 12px; flex-wrap: wrap; }
.error { color: var(--denied); }
#toast { position: fixed; bottom: 16px; left: 50%; transform: translateX(-50%); background: var(--ink); color: var(--bg);
  padding: 8px 14px; border-radius: 6px; opacity: 0; transition: opacity .2s; pointer-events: none; }
#toast.on { opacity: .92; }
`;
