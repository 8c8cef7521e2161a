import type { Timeline } from "../../views.js";
import { $, el, sv } from "./dom.js";
import { clock, describeEvent, describeObservation, iso, LABEL, span, stateColor } from "./format.js";

/** Draws one task's calls as bars on a shared time axis (SVG), with the waits and events that marked them. */
export function renderTimeline(
  t: Timeline | null,
  selected: string | null,
  select: (key: string, taskId: string) => void,
): void {
  $("timeline-panel").hidden = !t;
  if (!t) return;
  $("tl-task").textContent = t.taskId;
  const box = $("timeline");
  const W = Math.max(360, box.clientWidth || 400);
  const LABELW = 112;
  const ROW = 24;
  const TOP = 22;
  const H = TOP + t.calls.length * ROW + 8;
  const open = t.calls.some((c) => c.state !== "completed" && c.state !== "denied");
  const t0 = t.from;
  let t1 = Math.max(t.to, open ? t.now : t.to);
  if (t1 - t0 < 50) t1 = t0 + 50;
  const x = (ms: number) => LABELW + ((W - LABELW - 40) * (ms - t0)) / (t1 - t0);
  const root = sv("svg", {
    viewBox: `0 0 ${W} ${H}`,
    role: "img",
    "aria-label": `timeline of task ${t.taskId}`,
  });
  const axis = sv("g", { class: "axis" }, root);
  const TICKS = Math.max(2, Math.floor((W - LABELW - 40) / 70));
  for (let i = 0; i <= TICKS; i++) {
    const ms = t0 + ((t1 - t0) * i) / TICKS;
    sv("line", { class: "grid", x1: x(ms), x2: x(ms), y1: TOP - 6, y2: H - 4 }, axis);
    sv(
      "text",
      { x: x(ms), y: 12, "text-anchor": i === 0 ? "start" : "middle", text: `+${span(ms - t0)}` },
      axis,
    );
  }
  t.calls.forEach((c, n) => {
    const y = TOP + n * ROW;
    const g = sv(
      "g",
      { class: `row${c.key === selected ? " sel" : ""}`, "data-key": c.key, style: "cursor:pointer" },
      root,
    );
    g.addEventListener("click", () => select(c.key, c.taskId));
    const name = c.tool + (c.step !== undefined ? ` #${c.step}` : "");
    sv(
      "text",
      { x: 0, y: y + 15, text: name.length > 18 ? `${name.slice(0, 17)}…` : name, title: `${name} ${c.key}` },
      g,
    );
    const end = c.state === "completed" || c.state === "denied" ? c.updatedAt : Math.max(c.updatedAt, t.now);
    const bx = x(c.createdAt);
    sv(
      "rect",
      {
        class: "bar",
        x: bx,
        y: y + 5,
        width: Math.max(3, x(end) - bx),
        height: 13,
        rx: 3,
        fill: stateColor(c.state),
        "fill-opacity": 0.85,
        title: `${c.tool}: ${LABEL[c.state]}, ${c.attempts} attempt(s), ${span(end - c.createdAt)}`,
      },
      g,
    );
    // Waits for a person: from the request to the decision (or now).
    let requested: number | null = null;
    let unknownAt: number | null = null;
    for (const e of c.events) {
      if (e.type === "approval_requested") requested = e.at;
      if ((e.type === "approved" || e.type === "denied") && requested !== null) {
        band(
          g,
          x(requested),
          x(e.at),
          y,
          "var(--awaiting_approval)",
          `waited for approval ${span(e.at - requested)}`,
        );
        requested = null;
      }
      if (e.type === "outcome_unknown") unknownAt = e.at;
      if (e.type === "resolved" && unknownAt !== null) {
        band(
          g,
          x(unknownAt),
          x(e.at),
          y,
          "var(--outcome_unknown)",
          `outcome unknown for ${span(e.at - unknownAt)}`,
        );
        unknownAt = null;
      }
    }
    if (requested !== null) {
      band(
        g,
        x(requested),
        x(t.now),
        y,
        "var(--awaiting_approval)",
        `awaiting approval for ${span(t.now - requested)}`,
      );
    }
    if (unknownAt !== null) {
      band(
        g,
        x(unknownAt),
        x(t.now),
        y,
        "var(--outcome_unknown)",
        `outcome unknown for ${span(t.now - unknownAt)}`,
      );
    }
    if (c.state === "pending" && c.leaseUntil) {
      sv(
        "line",
        {
          x1: x(end),
          x2: x(Math.min(c.leaseUntil, t1)),
          y1: y + 11,
          y2: y + 11,
          stroke: "var(--pending)",
          "stroke-dasharray": "3 3",
          title: `lease until ${iso(c.leaseUntil)}`,
        },
        g,
      );
    }
    for (const e of c.events) marker(g, x(e.at), y, e.type, `${describeEvent(e)} at ${clock(e.at)}`);
    for (const o of c.observations) {
      if (o.type === "taken_over")
        marker(g, x(o.at), y, "taken_over", `${describeObservation(o)} at ${clock(o.at)}`);
      if (o.type === "attempts")
        marker(g, x(o.at), y, "attempt", `${describeObservation(o)} at ${clock(o.at)}`);
    }
    if (c.attempts > 1) {
      sv(
        "text",
        {
          x: Math.min(x(end) + 5, W - 30),
          y: y + 15,
          text: `×${c.attempts}`,
          title: `${c.attempts} attempts`,
        },
        g,
      );
    }
  });
  box.replaceChildren(root);
}

function band(g: SVGGElement, x1: number, x2: number, y: number, color: string, title: string): void {
  sv(
    "rect",
    {
      x: x1,
      y: y + 2,
      width: Math.max(2, x2 - x1),
      height: 19,
      fill: "none",
      stroke: color,
      "stroke-width": 2,
      "stroke-dasharray": "4 2",
      rx: 3,
      title,
    },
    g,
  );
}

function marker(g: SVGGElement, cx: number, y: number, type: string, title: string): void {
  const cy = y + 11.5;
  const ring = { stroke: "var(--panel)", "stroke-width": 1.5, title };
  if (type === "approved" || type === "resolved") {
    sv("circle", { cx, cy, r: 5, fill: "var(--completed)", ...ring }, g);
  } else if (type === "denied") {
    sv(
      "path",
      { d: `M${cx - 4} ${cy - 4}l8 8m0 -8l-8 8`, stroke: "var(--denied)", "stroke-width": 2.5, title },
      g,
    );
  } else if (type === "outcome_unknown") {
    sv(
      "path",
      { d: `M${cx} ${cy - 6}l6 11h-12z`, fill: "var(--outcome_unknown)", stroke: "var(--panel)", title },
      g,
    );
  } else if (type === "approval_requested") {
    sv(
      "path",
      {
        d: `M${cx} ${cy - 6}l5 6l-5 6l-5 -6z`,
        fill: "var(--awaiting_approval)",
        stroke: "var(--panel)",
        title,
      },
      g,
    );
  } else if (type === "taken_over") {
    sv("circle", { cx, cy, r: 5, fill: "var(--takeover)", ...ring }, g);
  } else {
    sv(
      "line",
      { x1: cx, x2: cx, y1: y + 3, y2: y + 20, stroke: "var(--ink)", "stroke-width": 1.5, title },
      g,
    );
  }
}

export function renderLegend(): void {
  const items: [string, string][] = [
    ["completed", "completed"],
    ["pending", "running (pending, lease dashed)"],
    ["awaiting_approval", "waiting for approval"],
    ["approved", "approved"],
    ["outcome_unknown", "outcome unknown"],
    ["denied", "denied"],
    ["takeover", "lease taken over (seen live)"],
  ];
  $("legend").replaceChildren(
    ...items.map(([color, text]) => el("span", {}, el("i", { style: `--c: var(--${color})` }), text)),
    el(
      "span",
      { title: "A replay reads the ledger without writing to it, so the ledger has no trace of it." },
      "| attempt counted · ◆ approval asked · ● decided · ▲ unknown · replays and waits are not recorded in the ledger",
    ),
  );
}
