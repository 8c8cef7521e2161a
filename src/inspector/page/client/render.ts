import type { RecordState } from "../../../store/types.js";
import type { CallDetail, CallList, CallSummary, Counts, TaskList } from "../../views.js";
import { type ActionHooks, actionButtons } from "./actions.js";
import { $, copyButton, el } from "./dom.js";
import {
  ago,
  clock,
  describeEvent,
  describeObservation,
  iso,
  LABEL,
  STATES,
  shortKey,
  span,
  stateColor,
} from "./format.js";

/** What the person is looking at: filters, page, and the selected call and task. */
export interface View {
  filter: { task: string; tool: string; state: RecordState | "" };
  offset: number;
  limit: number;
  selected: string | null;
  task: string | null;
}

/** What the rendered parts do when clicked. */
export interface Handlers extends ActionHooks {
  setFilter(name: keyof View["filter"], value: string): void;
  select(key: string, taskId: string): void;
}

export function badge(state: RecordState): HTMLSpanElement {
  return el("span", { class: "state", style: `--c: ${stateColor(state)}`, text: LABEL[state] || state });
}

export function renderCounts(c: Counts, view: View, on: Handlers): void {
  const nav = $("counts");
  nav.replaceChildren(
    el(
      "button",
      {
        type: "button",
        class: `count${view.filter.state ? "" : " on"}`,
        style: "--c: var(--accent)",
        onclick: () => on.setFilter("state", ""),
      },
      el("b", { text: c.total }),
      el("span", { text: "all calls" }),
    ),
    ...STATES.map((state) =>
      el(
        "button",
        {
          type: "button",
          class: `count${view.filter.state === state ? " on" : ""}`,
          "data-state": state,
          style: `--c: ${stateColor(state)}`,
          onclick: () => on.setFilter("state", view.filter.state === state ? "" : state),
        },
        el("b", { text: c.counts[state] || 0 }),
        el("span", { text: LABEL[state] }),
      ),
    ),
  );
  const notes: string[] = [];
  if (c.truncated) notes.push(`showing the first ${c.total} calls only (--max-records)`);
  if (c.unreadable) notes.push(`${c.unreadable} records under call: are not idemkey ledger records`);
  $("notice").textContent = notes.join("; ");
}

function fillSelect(
  select: HTMLSelectElement,
  values: readonly string[],
  current: string,
  all: string,
  label: (value: string) => string = (v) => v,
): void {
  const want = ["", ...values];
  if (current && !want.includes(current)) want.push(current);
  const have = Array.from(select.options, (o) => o.value);
  if (have.join("\n") !== want.join("\n")) {
    select.replaceChildren(...want.map((v) => el("option", { value: v, text: v === "" ? all : label(v) })));
  }
  select.value = current;
}

export function renderFilters(c: Counts, t: TaskList, view: View): void {
  fillSelect(
    $<HTMLSelectElement>("f-task"),
    t.tasks.map((x) => x.taskId),
    view.filter.task,
    "all tasks",
  );
  fillSelect($<HTMLSelectElement>("f-tool"), c.tools, view.filter.tool, "all tools");
  fillSelect(
    $<HTMLSelectElement>("f-state"),
    STATES,
    view.filter.state,
    "all states",
    (s) => LABEL[s as RecordState],
  );
}

function lease(call: CallSummary): HTMLSpanElement {
  if (call.state !== "pending" || call.leaseUntil === null) return el("span", { class: "muted", text: "—" });
  const left = call.leaseUntil - Date.now();
  return el(
    "span",
    { title: `held by claim ${call.holder} until ${iso(call.leaseUntil)}` },
    el("code", { text: call.holder || "?" }),
    " ",
    el("span", {
      class: left < 0 ? "error" : "muted",
      text: left < 0 ? "expired" : `until ${clock(call.leaseUntil)}`,
    }),
  );
}

export function renderCalls(list: CallList, view: View, on: Handlers): void {
  const body = $<HTMLTableElement>("calls").tBodies[0]!;
  body.replaceChildren(
    ...list.calls.map((call) =>
      el(
        "tr",
        {
          "data-key": call.key,
          "data-state": call.state,
          class: call.key === view.selected ? "sel" : "",
          onclick: () => on.select(call.key, call.taskId),
        },
        el("td", { class: "task", title: call.taskId, text: call.taskId }),
        el(
          "td",
          {},
          el("b", { text: call.tool }),
          call.step !== undefined ? el("span", { class: "muted", text: ` #${call.step}` }) : null,
        ),
        el(
          "td",
          {},
          el(
            "span",
            { class: "key" },
            el("code", { title: call.key, text: shortKey(call.key) }),
            copyButton(call.key),
          ),
        ),
        el("td", {}, badge(call.state)),
        el("td", { class: "num", text: call.attempts }),
        el("td", {}, lease(call)),
        el("td", { title: iso(call.createdAt), text: ago(call.createdAt) }),
        el("td", {
          class: "num",
          title: `last change ${iso(call.updatedAt)}`,
          text: call.durationMs !== null ? span(call.durationMs) : "—",
        }),
        el("td", {}, actionButtons(call, on)),
      ),
    ),
  );
  $("empty").hidden = list.calls.length > 0;
  const last = Math.min(list.offset + list.limit, list.total);
  $("page").textContent = list.total ? `${list.offset + 1}–${last} of ${list.total}` : "";
  $<HTMLButtonElement>("prev").disabled = list.offset === 0;
  $<HTMLButtonElement>("next").disabled = last >= list.total;
}

const pre = (value: unknown) => el("pre", { text: JSON.stringify(value, null, 2) });

export function renderDetail(d: CallDetail | null, view: View, on: Handlers): void {
  $("detail-panel").hidden = !d;
  $("hint").hidden = !!(d || view.task);
  if (!d) return;
  const dl = el("dl", {});
  const row = (name: string, value: Node | string) =>
    dl.append(el("dt", { text: name }), el("dd", {}, value));
  row("Key", el("span", { class: "key" }, el("code", { text: d.key }), copyButton(d.key)));
  row("Task", el("code", { text: d.taskId }));
  row("Tool", d.tool + (d.step !== undefined ? `  (step ${d.step})` : ""));
  row("Effect", d.effect);
  row("State", badge(d.state));
  row("Attempts", String(d.attempts));
  if (d.state === "pending") row("Lease", lease(d));
  row("Created", iso(d.createdAt));
  row("Last change", iso(d.updatedAt) + (d.durationMs !== null ? `  (took ${span(d.durationMs)})` : ""));
  row("Expires", iso(d.expiresAt));
  row(
    "Args hash",
    d.argsHash === null
      ? el("span", {
          class: "muted",
          text: "withheld: masked fields could be guessed from it (the key is such a hash too)",
        })
      : el("code", { text: d.argsHash }),
  );
  const box = $("detail");
  box.replaceChildren(
    dl,
    el("h4", { text: "Arguments (canonical JSON, as recorded)" }),
    pre(JSON.parse(d.argsCanonical)),
  );
  if ("result" in d) box.append(el("h4", { text: "Result" }), pre(d.result));
  else {
    box.append(
      el("h4", { text: "Result" }),
      el("p", { class: "muted", text: `none recorded (${LABEL[d.state]})` }),
    );
  }
  const acts = actionButtons(d, on);
  if (acts) box.append(el("div", { class: "dlg-buttons" }, acts));
  box.append(el("h4", { text: "Audit trail" }));
  if (d.events.length === 0) {
    box.append(el("p", { class: "muted", text: "no approvals, denials or resolutions" }));
  } else {
    box.append(
      el(
        "ol",
        { class: "events" },
        d.events.map((e) =>
          el(
            "li",
            {},
            el("span", { class: "muted", title: iso(e.at), text: `${clock(e.at)} ` }),
            describeEvent(e),
          ),
        ),
      ),
    );
  }
  if (d.observations.length) {
    box.append(
      el("h4", { text: "Seen changing by this inspector" }),
      el(
        "ol",
        { class: "events" },
        d.observations.map((o) =>
          el(
            "li",
            {},
            el("span", { class: "muted", title: iso(o.at), text: `${clock(o.at)} ` }),
            describeObservation(o),
          ),
        ),
      ),
    );
  }
}
