/**
 * The page's script: vanilla JavaScript (no framework, nothing fetched but this inspector's own API), kept as a
 * string so that the package ships it without a build step. It never puts ledger data into HTML: every value goes
 * in through textContent or an attribute.
 */
export const PAGE_JS = String.raw`"use strict";
(function () {
  var STATES = ["pending", "awaiting_approval", "approved", "outcome_unknown", "completed", "denied"];
  var LABEL = { pending: "pending", completed: "completed", awaiting_approval: "awaiting approval", approved: "approved",
    denied: "denied", outcome_unknown: "outcome unknown" };
  var S = { config: null, token: "", filter: { task: "", tool: "", state: "" }, offset: 0, limit: 50,
    selected: null, task: null, refreshing: null, again: false, live: false };

  function $(id) { return document.getElementById(id); }
  function el(tag, attrs) {
    var node = document.createElement(tag);
    for (var name in attrs || {}) {
      var v = attrs[name];
      if (v === undefined || v === null || v === false) continue;
      if (name === "text") node.textContent = String(v);
      else if (name === "class") node.className = v;
      // Through the CSSOM: the page's Content-Security-Policy refuses style attributes.
      else if (name === "style") node.style.cssText = v;
      else if (name.slice(0, 2) === "on") node.addEventListener(name.slice(2), v);
      else node.setAttribute(name, v === true ? "" : String(v));
    }
    function add(child) {
      if (child === null || child === undefined || child === false) return;
      if (Array.isArray(child)) child.forEach(add);
      else node.append(child instanceof Node ? child : document.createTextNode(String(child)));
    }
    for (var i = 2; i < arguments.length; i++) add(arguments[i]);
    return node;
  }
  var NS = "http://www.w3.org/2000/svg";
  function sv(tag, attrs, parent) {
    var node = document.createElementNS(NS, tag);
    for (var name in attrs || {}) {
      if (name === "text") node.textContent = String(attrs[name]);
      else if (name === "title") { var t = document.createElementNS(NS, "title"); t.textContent = attrs[name]; node.append(t); }
      else if (name === "fill" || name === "stroke" || name === "style") {
        if (name === "style") node.style.cssText = attrs[name]; else node.style[name] = attrs[name];
      }
      else node.setAttribute(name, String(attrs[name]));
    }
    if (parent) parent.append(node);
    return node;
  }
  function stateColor(state) { return "var(--" + state + ")"; }
  function badge(state) {
    return el("span", { class: "state", style: "--c: " + stateColor(state), text: LABEL[state] || state });
  }
  function shortKey(key) { return key.slice(0, 10) + "…"; }
  function iso(ms) { return new Date(ms).toISOString().replace("T", " ").replace("Z", " UTC"); }
  function clock(ms) { var d = new Date(ms); return d.toLocaleTimeString([], { hour12: false }) + "." + String(d.getMilliseconds()).padStart(3, "0"); }
  function ago(ms) {
    var s = (Date.now() - ms) / 1000;
    if (s < 0) return "in " + span(-s * 1000);
    if (s < 60) return Math.round(s) + " s ago";
    if (s < 3600) return Math.round(s / 60) + " min ago";
    if (s < 86400) return Math.round(s / 3600) + " h ago";
    return Math.round(s / 86400) + " d ago";
  }
  function span(ms) {
    if (ms < 1000) return Math.round(ms) + " ms";
    if (ms < 60000) return (ms / 1000).toFixed(ms < 10000 ? 2 : 1) + " s";
    if (ms < 3600000) return (ms / 60000).toFixed(1) + " min";
    return (ms / 3600000).toFixed(1) + " h";
  }
  function toast(text, bad) {
    var t = $("toast");
    t.textContent = text;
    t.style.background = bad ? "var(--denied)" : "";
    t.className = "on";
    clearTimeout(toast.timer);
    toast.timer = setTimeout(function () { t.className = ""; }, bad ? 6000 : 3000);
  }
  function copy(text) {
    function fallback() {
      var area = el("textarea", { style: "position:fixed;opacity:0" });
      area.value = text;
      document.body.append(area);
      area.select();
      try { document.execCommand("copy"); toast("Key copied"); } catch (e) { toast("Copy failed: select the key", true); }
      area.remove();
    }
    if (navigator.clipboard && window.isSecureContext) {
      navigator.clipboard.writeText(text).then(function () { toast("Key copied"); }, fallback);
    } else fallback();
  }
  function copyButton(key) {
    return el("button", { type: "button", class: "copy", title: "Copy the full key", "aria-label": "copy key",
      onclick: function (e) { e.stopPropagation(); copy(key); } }, copyIcon());
  }
  function copyIcon() {
    var icon = sv("svg", { viewBox: "0 0 16 16", "aria-hidden": "true" });
    sv("rect", { x: 5.5, y: 5.5, width: 8, height: 8, rx: 1.5 }, icon);
    sv("path", { d: "M10.5 3.5v-1a1 1 0 0 0 -1 -1h-6a1 1 0 0 0 -1 1v6a1 1 0 0 0 1 1h1" }, icon);
    return icon;
  }

  function headers(extra) {
    var h = Object.assign({ accept: "application/json" }, extra || {});
    if (S.token) h["x-idemkey-token"] = S.token;
    return h;
  }
  function api(path, options) {
    options = options || {};
    return fetch(path, { method: options.method || "GET", headers: headers(options.body ? { "content-type": "application/json" } : {}),
      body: options.body ? JSON.stringify(options.body) : undefined, cache: "no-store", credentials: "omit" })
      .then(function (res) {
        return res.text().then(function (text) {
          var body = null;
          try { body = text ? JSON.parse(text) : null; } catch (e) { body = { detail: text }; }
          if (!res.ok) {
            var err = new Error((body && (body.detail || body.title)) || ("HTTP " + res.status));
            err.problem = body || {};
            err.status = res.status;
            throw err;
          }
          return body;
        });
      });
  }
  function needToken(err) {
    var slug = err && err.problem && String(err.problem.type || "").split("/").pop();
    return slug === "token-required" || slug === "token-invalid";
  }
  function askToken(then) {
    dialog("Token needed", [
      el("p", { text: "Paste the token that idemkey inspect printed when it started (or the one given with --token)." }),
      el("input", { id: "dlg-token", type: "password", style: "width:100%", autocomplete: "off" })
    ], [{ label: "Use this token", primary: true, run: function () {
      var v = $("dlg-token").value.trim();
      if (!v) throw new Error("The token is empty");
      S.token = v;
      sessionStorage.setItem("idemkey-token", v);
      if (!S.live) stream();
      closeDialog();
      if (then) then();
    } }]);
  }

  // --- data ---
  function query() {
    var q = new URLSearchParams();
    if (S.filter.task) q.set("task", S.filter.task);
    if (S.filter.tool) q.set("tool", S.filter.tool);
    if (S.filter.state) q.set("state", S.filter.state);
    q.set("offset", String(S.offset));
    q.set("limit", String(S.limit));
    return q.toString();
  }
  function refresh() {
    if (S.refreshing) { S.again = true; return S.refreshing; }
    S.refreshing = Promise.all([
      api("/api/counts"), api("/api/calls?" + query()), api("/api/tasks?limit=500"),
      S.selected ? api("/api/calls/" + S.selected).catch(gone) : null,
      S.task ? api("/api/tasks/" + encodeURIComponent(S.task) + "/timeline").catch(gone) : null
    ]).then(function (r) {
      renderCounts(r[0]);
      renderFilters(r[0], r[2]);
      renderCalls(r[1]);
      renderDetail(r[3]);
      renderTimeline(r[4]);
    }).catch(function (err) {
      if (needToken(err)) askToken(refresh);
      else toast("Could not read the ledger: " + err.message, true);
    }).finally(function () {
      S.refreshing = null;
      if (S.again) { S.again = false; refresh(); }
    });
    return S.refreshing;
  }
  function gone(err) { if (err.status === 404) return null; throw err; }
  var pending = null;
  function soon() { clearTimeout(pending); pending = setTimeout(refresh, 120); }

  // --- rendering ---
  function renderCounts(c) {
    var nav = $("counts");
    nav.replaceChildren();
    var all = el("button", { type: "button", class: "count" + (S.filter.state ? "" : " on"), style: "--c: var(--accent)",
      onclick: function () { setFilter("state", ""); } }, el("b", { text: c.total }), el("span", { text: "all calls" }));
    nav.append(all);
    STATES.forEach(function (state) {
      nav.append(el("button", { type: "button", class: "count" + (S.filter.state === state ? " on" : ""),
        "data-state": state, style: "--c: " + stateColor(state),
        onclick: function () { setFilter("state", S.filter.state === state ? "" : state); } },
        el("b", { text: c.counts[state] || 0 }), el("span", { text: LABEL[state] })));
    });
    var notes = [];
    if (c.truncated) notes.push("showing the first " + c.total + " calls only (--max-records)");
    if (c.unreadable) notes.push(c.unreadable + " records under call: are not idemkey ledger records");
    $("notice").textContent = notes.join("; ");
  }
  function fillSelect(select, values, current, all, label) {
    var want = [""].concat(values);
    if (current && want.indexOf(current) < 0) want.push(current);
    var have = Array.prototype.map.call(select.options, function (o) { return o.value; });
    if (have.join("\n") !== want.join("\n")) {
      select.replaceChildren.apply(select, want.map(function (v) {
        return el("option", { value: v, text: v === "" ? all : (label ? label(v) : v) });
      }));
    }
    select.value = current;
  }
  function renderFilters(c, t) {
    fillSelect($("f-task"), t.tasks.map(function (x) { return x.taskId; }), S.filter.task, "all tasks");
    fillSelect($("f-tool"), c.tools, S.filter.tool, "all tools");
    fillSelect($("f-state"), STATES, S.filter.state, "all states", function (s) { return LABEL[s]; });
  }
  function lease(call) {
    if (call.state !== "pending") return el("span", { class: "muted", text: "—" });
    var left = call.leaseUntil - Date.now();
    return el("span", { title: "held by claim " + call.holder + " until " + iso(call.leaseUntil) },
      el("code", { text: call.holder || "?" }), " ",
      el("span", { class: left < 0 ? "error" : "muted", text: left < 0 ? "expired" : "until " + clock(call.leaseUntil) }));
  }
  function actions(call) {
    if (S.config.readOnly) return null;
    if (call.state === "awaiting_approval") {
      return [el("button", { type: "button", class: "act primary", "data-action": "approve", onclick: stop(function () { approve(call); }) }, "Approve"),
        el("button", { type: "button", class: "act danger", "data-action": "deny", onclick: stop(function () { deny(call); }) }, "Deny")];
    }
    if (call.state === "outcome_unknown") {
      return el("button", { type: "button", class: "act", "data-action": "resolve", onclick: stop(function () { resolveCall(call); }) }, "Resolve…");
    }
    return null;
  }
  function stop(fn) { return function (e) { e.stopPropagation(); fn(); }; }
  function renderCalls(list) {
    var body = $("calls").tBodies[0];
    body.replaceChildren();
    list.calls.forEach(function (call) {
      var row = el("tr", { "data-key": call.key, "data-state": call.state, class: call.key === S.selected ? "sel" : "",
        onclick: function () { select(call.key, call.taskId); } },
        el("td", { class: "task", title: call.taskId, text: call.taskId }),
        el("td", {}, el("b", { text: call.tool }), call.step !== undefined ? el("span", { class: "muted", text: " #" + call.step }) : null),
        el("td", {}, el("span", { class: "key" }, el("code", { title: call.key, text: shortKey(call.key) }), copyButton(call.key))),
        el("td", {}, badge(call.state)),
        el("td", { class: "num", text: call.attempts }),
        el("td", {}, lease(call)),
        el("td", { title: iso(call.createdAt), text: ago(call.createdAt) }),
        el("td", { class: "num", title: "last change " + iso(call.updatedAt),
          text: call.durationMs !== null ? span(call.durationMs) : "—" }),
        el("td", {}, actions(call)));
      body.append(row);
    });
    $("empty").hidden = list.calls.length > 0;
    var last = Math.min(list.offset + list.limit, list.total);
    $("page").textContent = list.total ? (list.offset + 1) + "–" + last + " of " + list.total : "";
    $("prev").disabled = list.offset === 0;
    $("next").disabled = last >= list.total;
  }
  function pre(value) { return el("pre", { text: JSON.stringify(value, null, 2) }); }
  function describeEvent(e) {
    var parts = [e.type.replace(/_/g, " ")];
    if (e.by) parts.push("by " + e.by);
    if (e.how) parts.push("(" + e.how + ")");
    if (e.reason) parts.push("— " + e.reason);
    if (e.error) parts.push("— " + e.error);
    if (typeof e.previousAttempts === "number") parts.push("(after " + e.previousAttempts + " attempt(s) of a stopped process)");
    return parts.join(" ");
  }
  function describeObservation(o) {
    if (o.type === "taken_over") return "lease taken over: claim " + (o.from || "?") + " → " + (o.to || "?");
    if (o.type === "attempts") return "attempts recorded: " + o.attempts;
    return "state " + LABEL[o.from] + " → " + LABEL[o.to];
  }
  function renderDetail(d) {
    $("detail-panel").hidden = !d;
    $("hint").hidden = !!(d || S.task);
    if (!d) return;
    var dl = el("dl", {});
    function row(name, value) { dl.append(el("dt", { text: name }), el("dd", {}, value)); }
    row("Key", el("span", { class: "key" }, el("code", { text: d.key }), copyButton(d.key)));
    row("Task", el("code", { text: d.taskId }));
    row("Tool", d.tool + (d.step !== undefined ? "  (step " + d.step + ")" : ""));
    row("Effect", d.effect);
    row("State", badge(d.state));
    row("Attempts", String(d.attempts));
    if (d.state === "pending") row("Lease", lease(d));
    row("Created", iso(d.createdAt));
    row("Last change", iso(d.updatedAt) + (d.durationMs !== null ? "  (took " + span(d.durationMs) + ")" : ""));
    row("Expires", iso(d.expiresAt));
    row("Args hash", d.argsHash === null
      ? el("span", { class: "muted", text: "withheld: masked fields could be guessed from it (the key is such a hash too)" })
      : el("code", { text: d.argsHash }));
    var box = $("detail");
    box.replaceChildren(dl, el("h4", { text: "Arguments (canonical JSON, as recorded)" }), pre(JSON.parse(d.argsCanonical)));
    if ("result" in d) box.append(el("h4", { text: "Result" }), pre(d.result));
    else box.append(el("h4", { text: "Result" }), el("p", { class: "muted", text: "none recorded (" + LABEL[d.state] + ")" }));
    var acts = actions(d);
    if (acts) box.append(el("div", { class: "dlg-buttons" }, acts));
    box.append(el("h4", { text: "Audit trail" }));
    if (d.events.length === 0) box.append(el("p", { class: "muted", text: "no approvals, denials or resolutions" }));
    else box.append(el("ol", { class: "events" }, d.events.map(function (e) {
      return el("li", {}, el("span", { class: "muted", title: iso(e.at), text: clock(e.at) + " " }), describeEvent(e));
    })));
    if (d.observations.length) {
      box.append(el("h4", { text: "Seen changing by this inspector" }), el("ol", { class: "events" }, d.observations.map(function (o) {
        return el("li", {}, el("span", { class: "muted", title: iso(o.at), text: clock(o.at) + " " }), describeObservation(o));
      })));
    }
  }

  // --- timeline (SVG) ---
  function renderTimeline(t) {
    $("timeline-panel").hidden = !t;
    if (!t) return;
    $("tl-task").textContent = t.taskId;
    var box = $("timeline");
    var W = Math.max(360, box.clientWidth || 400), LABELW = 112, ROW = 24, TOP = 22;
    var H = TOP + t.calls.length * ROW + 8;
    var open = t.calls.some(function (c) { return c.state !== "completed" && c.state !== "denied"; });
    var t0 = t.from, t1 = Math.max(t.to, open ? t.now : t.to);
    if (t1 - t0 < 50) t1 = t0 + 50;
    var x = function (ms) { return LABELW + (W - LABELW - 40) * (ms - t0) / (t1 - t0); };
    var root = sv("svg", { viewBox: "0 0 " + W + " " + H, role: "img", "aria-label": "timeline of task " + t.taskId });
    var axis = sv("g", { class: "axis" }, root);
    var TICKS = Math.max(2, Math.floor((W - LABELW - 40) / 70));
    for (var i = 0; i <= TICKS; i++) {
      var ms = t0 + (t1 - t0) * i / TICKS;
      sv("line", { class: "grid", x1: x(ms), x2: x(ms), y1: TOP - 6, y2: H - 4 }, axis);
      sv("text", { x: x(ms), y: 12, "text-anchor": i === 0 ? "start" : "middle", text: "+" + span(ms - t0) }, axis);
    }
    t.calls.forEach(function (c, n) {
      var y = TOP + n * ROW;
      var g = sv("g", { class: "row" + (c.key === S.selected ? " sel" : ""), "data-key": c.key, style: "cursor:pointer" }, root);
      g.addEventListener("click", function () { select(c.key, c.taskId); });
      var name = c.tool + (c.step !== undefined ? " #" + c.step : "");
      sv("text", { x: 0, y: y + 15, text: name.length > 18 ? name.slice(0, 17) + "…" : name, title: name + " " + c.key }, g);
      var end = c.state === "completed" || c.state === "denied" ? c.updatedAt : Math.max(c.updatedAt, t.now);
      var bx = x(c.createdAt);
      sv("rect", { class: "bar", x: bx, y: y + 5, width: Math.max(3, x(end) - bx), height: 13, rx: 3,
        fill: stateColor(c.state), "fill-opacity": 0.85,
        title: c.tool + ": " + LABEL[c.state] + ", " + c.attempts + " attempt(s), " + span(end - c.createdAt) }, g);
      // Waits for a person: from the request to the decision (or now).
      var requested = null, unknownAt = null;
      c.events.forEach(function (e) {
        if (e.type === "approval_requested") requested = e.at;
        if ((e.type === "approved" || e.type === "denied") && requested !== null) {
          band(g, x(requested), x(e.at), y, "var(--awaiting_approval)", "waited for approval " + span(e.at - requested)); requested = null;
        }
        if (e.type === "outcome_unknown") unknownAt = e.at;
        if (e.type === "resolved" && unknownAt !== null) {
          band(g, x(unknownAt), x(e.at), y, "var(--outcome_unknown)", "outcome unknown for " + span(e.at - unknownAt)); unknownAt = null;
        }
      });
      if (requested !== null) band(g, x(requested), x(t.now), y, "var(--awaiting_approval)", "awaiting approval for " + span(t.now - requested));
      if (unknownAt !== null) band(g, x(unknownAt), x(t.now), y, "var(--outcome_unknown)", "outcome unknown for " + span(t.now - unknownAt));
      if (c.state === "pending" && c.leaseUntil) {
        sv("line", { x1: x(end), x2: x(Math.min(c.leaseUntil, t1)), y1: y + 11, y2: y + 11, stroke: "var(--pending)",
          "stroke-dasharray": "3 3", title: "lease until " + iso(c.leaseUntil) }, g);
      }
      c.events.forEach(function (e) { marker(g, x(e.at), y, e.type, describeEvent(e) + " at " + clock(e.at)); });
      c.observations.forEach(function (o) {
        if (o.type === "taken_over") marker(g, x(o.at), y, "taken_over", describeObservation(o) + " at " + clock(o.at));
        if (o.type === "attempts") marker(g, x(o.at), y, "attempt", describeObservation(o) + " at " + clock(o.at));
      });
      if (c.attempts > 1) sv("text", { x: Math.min(x(end) + 5, W - 30), y: y + 15, text: "×" + c.attempts, title: c.attempts + " attempts" }, g);
    });
    box.replaceChildren(root);
  }
  function band(g, x1, x2, y, color, title) {
    sv("rect", { x: x1, y: y + 2, width: Math.max(2, x2 - x1), height: 19, fill: "none", stroke: color,
      "stroke-width": 2, "stroke-dasharray": "4 2", rx: 3, title: title }, g);
  }
  function marker(g, cx, y, type, title) {
    var cy = y + 11.5;
    if (type === "approved" || type === "resolved") {
      sv("circle", { cx: cx, cy: cy, r: 5, fill: "var(--completed)", stroke: "var(--panel)", "stroke-width": 1.5, title: title }, g);
    } else if (type === "denied") {
      sv("path", { d: "M" + (cx - 4) + " " + (cy - 4) + "l8 8m0 -8l-8 8", stroke: "var(--denied)", "stroke-width": 2.5, title: title }, g);
    } else if (type === "outcome_unknown") {
      sv("path", { d: "M" + cx + " " + (cy - 6) + "l6 11h-12z", fill: "var(--outcome_unknown)", stroke: "var(--panel)", title: title }, g);
    } else if (type === "approval_requested") {
      sv("path", { d: "M" + cx + " " + (cy - 6) + "l5 6l-5 6l-5 -6z", fill: "var(--awaiting_approval)", stroke: "var(--panel)", title: title }, g);
    } else if (type === "taken_over") {
      sv("circle", { cx: cx, cy: cy, r: 5, fill: "var(--takeover)", stroke: "var(--panel)", "stroke-width": 1.5, title: title }, g);
    } else {
      sv("line", { x1: cx, x2: cx, y1: y + 3, y2: y + 20, stroke: "var(--ink)", "stroke-width": 1.5, title: title }, g);
    }
  }
  function renderLegend() {
    var items = [["completed", "completed"], ["pending", "running (pending, lease dashed)"], ["awaiting_approval", "waiting for approval"],
      ["approved", "approved"], ["outcome_unknown", "outcome unknown"], ["denied", "denied"], ["takeover", "lease taken over (seen live)"]];
    $("legend").replaceChildren.apply($("legend"), items.map(function (i) {
      return el("span", {}, el("i", { style: "--c: var(--" + i[0] + ")" }), i[1]);
    }).concat([el("span", { title: "A replay reads the ledger without writing to it, so the ledger has no trace of it." },
      "| attempt counted · ◆ approval asked · ● decided · ▲ unknown · replays and waits are not recorded in the ledger")]));
  }

  // --- actions ---
  var dlgActions = [];
  function dialog(title, body, buttons) {
    $("dlg-title").textContent = title;
    $("dlg-body").replaceChildren.apply($("dlg-body"), body);
    $("dlg-error").hidden = true;
    dlgActions = buttons;
    $("dlg-buttons").replaceChildren.apply($("dlg-buttons"), [el("button", { type: "button", id: "dlg-cancel", onclick: closeDialog }, "Cancel")]
      .concat(buttons.map(function (b, i) {
        return el("button", { type: "button", id: b.id || ("dlg-ok" + (i ? i : "")), class: b.primary ? "primary" : b.danger ? "danger" : "",
          onclick: function () { run(b); } }, b.label);
      })));
    if (!$("dlg").open) $("dlg").showModal();
  }
  function run(b) {
    var buttons = $("dlg-buttons").querySelectorAll("button");
    try {
      var p = b.run();
      if (p && p.then) {
        buttons.forEach(function (x) { x.disabled = true; });
        p.catch(showError).finally(function () { buttons.forEach(function (x) { x.disabled = false; }); });
      }
    } catch (err) { showError(err); }
  }
  function showError(err) { $("dlg-error").textContent = err.message; $("dlg-error").hidden = false; }
  function closeDialog() { if ($("dlg").open) $("dlg").close(); }
  function by() { return $("by").value.trim() || undefined; }
  function callBox(call) {
    return el("dl", {}, el("dt", { text: "Tool" }), el("dd", { text: call.tool }), el("dt", { text: "Task" }),
      el("dd", {}, el("code", { text: call.taskId })), el("dt", { text: "Key" }), el("dd", {}, el("code", { text: call.key })));
  }
  function send(call, verb, body, done) {
    if (!S.token) return Promise.reject(new Error("No token: reopen the URL idemkey inspect printed, or reload to paste it"));
    body.by = by();
    return api("/api/calls/" + call.key + "/" + verb, { method: "POST", body: body }).then(function (r) {
      closeDialog();
      toast(done + " by " + r.by);
      S.selected = call.key;
      S.task = call.taskId;
      return refresh();
    }, function (err) {
      if (needToken(err)) { S.token = ""; sessionStorage.removeItem("idemkey-token"); }
      throw err;
    });
  }
  function withToken(fn) { return function (call) { if (S.token) fn(call); else askToken(function () { fn(call); }); }; }
  var approve = withToken(function (call) {
    var argsBox = el("pre", { text: "loading…" });
    api("/api/calls/" + call.key).then(function (d) { argsBox.textContent = JSON.stringify(JSON.parse(d.argsCanonical), null, 2); },
      function (err) { argsBox.textContent = err.message; });
    dialog("Approve " + call.tool + "?", [callBox(call), el("h4", { text: "It will run with these arguments" }), argsBox],
      [{ label: "Approve", primary: true, id: "dlg-approve", run: function () { return send(call, "approve", {}, "Approved"); } }]);
  });
  var deny = withToken(function (call) {
    dialog("Deny " + call.tool + "?", [callBox(call), el("h4", { text: "Reason (recorded, and given to the caller)" }),
      el("textarea", { id: "dlg-reason", placeholder: "why not" })],
      [{ label: "Deny", danger: true, id: "dlg-deny", run: function () {
        var reason = $("dlg-reason").value.trim();
        if (!reason) throw new Error("Say why: the reason is recorded and the caller receives it");
        return send(call, "deny", { reason: reason }, "Denied");
      } }]);
  });
  var resolveCall = withToken(function (call) {
    dialog("Resolve " + call.tool, [callBox(call),
      el("p", { text: "The harness lost track of this call and cannot tell whether it took effect. Check the owner's records, then:" }),
      el("h4", { text: "It took effect: the result found in the world (JSON), replayed to later calls" }),
      el("textarea", { id: "dlg-result", placeholder: "{\"id\": \"msg_123\"}" }),
      el("h4", { text: "It did not take effect: allow the next call with this key to run it" })],
      [{ label: "Allow a retry", id: "dlg-retry", run: function () { return send(call, "resolve", { retry: true }, "Retry allowed"); } },
       { label: "Record this result", primary: true, id: "dlg-record", run: function () {
        var text = $("dlg-result").value.trim();
        if (!text) throw new Error("Paste the result as JSON, or allow a retry");
        var result;
        try { result = JSON.parse(text); } catch (e) { throw new Error("The result is not JSON: " + e.message); }
        return send(call, "resolve", { result: result }, "Result recorded");
      } }]);
  });

  // --- navigation ---
  function select(key, taskId) {
    S.selected = key;
    S.task = taskId;
    refresh();
  }
  function setFilter(name, value) {
    S.filter[name] = value;
    S.offset = 0;
    refresh();
  }

  // --- live updates: server-sent events read through fetch, so that the token header can go along ---
  function setLive(on, text) {
    S.live = on;
    $("live").className = "live" + (on ? "" : " off");
    $("live").textContent = text;
  }
  function stream() {
    fetch("/api/stream", { headers: headers({ accept: "text/event-stream" }), cache: "no-store", credentials: "omit" }).then(function (res) {
      // The stream needs the token even on loopback; without one, say so instead of retrying in vain.
      if (res.status === 403) { setLive(false, "live view needs the token"); return; }
      if (!res.ok || !res.body) throw new Error("HTTP " + res.status);
      setLive(true, "live");
      var reader = res.body.getReader(), decoder = new TextDecoder(), buffer = "";
      function pump() {
        return reader.read().then(function (chunk) {
          if (chunk.done) throw new Error("stream ended");
          buffer += decoder.decode(chunk.value, { stream: true });
          var at;
          while ((at = buffer.indexOf("\n\n")) >= 0) {
            var block = buffer.slice(0, at); buffer = buffer.slice(at + 2);
            var event = "message", data = "";
            block.split("\n").forEach(function (line) {
              if (line.indexOf("event: ") === 0) event = line.slice(7);
              else if (line.indexOf("data: ") === 0) data += line.slice(6);
            });
            if (event === "change") { setLive(true, "live"); soon(); }
            if (event === "store-error") setLive(false, "store not answering");
          }
          return pump();
        });
      }
      return pump();
    }).catch(function () {
      setLive(false, "reconnecting…");
      setTimeout(stream, 2000);
    });
  }

  function start() {
    var m = /(?:^#|&)token=([^&]+)/.exec(location.hash);
    if (m) {
      sessionStorage.setItem("idemkey-token", decodeURIComponent(m[1]));
      history.replaceState(null, "", location.pathname + location.search);
    }
    S.token = sessionStorage.getItem("idemkey-token") || "";
    $("by").value = localStorage.getItem("idemkey-by") || "";
    $("by").addEventListener("change", function () { localStorage.setItem("idemkey-by", $("by").value.trim()); });
    $("f-task").addEventListener("change", function () { setFilter("task", this.value); });
    $("f-tool").addEventListener("change", function () { setFilter("tool", this.value); });
    $("f-state").addEventListener("change", function () { setFilter("state", this.value); });
    $("f-clear").addEventListener("click", function () { S.filter = { task: "", tool: "", state: "" }; S.offset = 0; refresh(); });
    $("prev").addEventListener("click", function () { S.offset = Math.max(0, S.offset - S.limit); refresh(); });
    $("next").addEventListener("click", function () { S.offset += S.limit; refresh(); });
    renderLegend();
    boot();
  }
  function boot() {
    api("/api/config").then(function (config) {
      S.config = config;
      $("store").textContent = config.label;
      $("ro").hidden = !config.readOnly;
      $("who").hidden = config.readOnly;
      $("by").placeholder = config.user;
      refresh();
      stream();
      // Relative times age even when nothing changes.
      setInterval(function () { if (!S.refreshing && !$("dlg").open) refresh(); }, 15000);
    }, function (err) {
      if (needToken(err)) askToken(boot);
      else toast("Could not reach the inspector: " + err.message, true);
    });
  }
  start();
})();
`;
