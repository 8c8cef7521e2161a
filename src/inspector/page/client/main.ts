/**
 * The inspector page's script, bundled at build time (scripts/build-page.mjs) into `PAGE_JS`. Vanilla DOM, no
 * framework, nothing fetched but this inspector's own API, whose answers are typed by the view models in views.ts.
 */
import type { KeyList } from "../../owner-keys.js";
import type { CallDetail, CallList, Counts, PageConfig, TaskList, Timeline } from "../../views.js";
import { api, gone, needToken, session } from "./api.js";
import { askToken as ask } from "./dialog.js";
import { $, toast } from "./dom.js";
import { renderKeys } from "./keys.js";
import { live, stream } from "./live.js";
import {
  type Handlers,
  renderCalls,
  renderCounts,
  renderDetail,
  renderFilters,
  type View,
} from "./render.js";
import { renderLegend, renderTimeline } from "./timeline.js";

const view: View = {
  filter: { task: "", tool: "", state: "" },
  offset: 0,
  limit: 50,
  selected: null,
  task: null,
};
let refreshing: Promise<void> | null = null;
let again = false;

function askToken(then: () => void): void {
  ask(() => {
    if (!live.on) stream(soon);
    then();
  });
}

const on: Handlers = {
  setFilter(name, value) {
    if (name === "state") view.filter.state = value as View["filter"]["state"];
    else view.filter[name] = value;
    view.offset = 0;
    void refresh();
  },
  select(key, taskId) {
    view.selected = key;
    view.task = taskId;
    void refresh();
  },
  done(call) {
    view.selected = call.key;
    view.task = call.taskId;
    return refresh();
  },
  askToken,
};

function query(): string {
  const q = new URLSearchParams();
  if (view.filter.task) q.set("task", view.filter.task);
  if (view.filter.tool) q.set("tool", view.filter.tool);
  if (view.filter.state) q.set("state", view.filter.state);
  q.set("offset", String(view.offset));
  q.set("limit", String(view.limit));
  return q.toString();
}

/** Reads everything shown at once; a refresh asked for while one runs runs once more after it. */
function refresh(): Promise<void> {
  if (refreshing) {
    again = true;
    return refreshing;
  }
  const { selected, task } = view;
  refreshing = Promise.all([
    api<Counts>("/api/counts"),
    api<CallList>(`/api/calls?${query()}`),
    api<TaskList>("/api/tasks?limit=500"),
    selected ? api<CallDetail>(`/api/calls/${selected}`).catch(gone) : null,
    task ? api<Timeline>(`/api/tasks/${encodeURIComponent(task)}/timeline`).catch(gone) : null,
    api<KeyList>("/api/keys?limit=100"),
  ])
    .then(([counts, calls, tasks, detail, timeline, keys]) => {
      renderCounts(counts, view, on);
      renderFilters(counts, tasks, view);
      renderCalls(calls, view, on);
      renderDetail(detail, view, on);
      renderTimeline(timeline, view.selected, on.select);
      renderKeys(keys);
    })
    .catch((err: Error) => {
      if (needToken(err)) askToken(() => void refresh());
      else toast(`Could not read the ledger: ${err.message}`, true);
    })
    .finally(() => {
      refreshing = null;
      if (again) {
        again = false;
        void refresh();
      }
    });
  return refreshing;
}

let pending: ReturnType<typeof setTimeout> | undefined;
/** A burst of change events reads the ledger once. */
function soon(): void {
  clearTimeout(pending);
  pending = setTimeout(refresh, 120);
}

function boot(): void {
  api<PageConfig>("/api/config").then(
    (config) => {
      session.config = config;
      $("store").textContent = config.label;
      $("ro").hidden = !config.readOnly;
      $("who").hidden = config.readOnly;
      $<HTMLInputElement>("by").placeholder = config.user;
      void refresh();
      stream(soon);
      // Relative times age even when nothing changes.
      setInterval(() => {
        if (!refreshing && !$<HTMLDialogElement>("dlg").open) void refresh();
      }, 15000);
    },
    (err: Error) => {
      if (needToken(err)) askToken(boot);
      else toast(`Could not reach the inspector: ${err.message}`, true);
    },
  );
}

function start(): void {
  const m = /(?:^#|&)token=([^&]+)/.exec(location.hash);
  if (m) {
    sessionStorage.setItem("idemkey-token", decodeURIComponent(m[1]!));
    history.replaceState(null, "", location.pathname + location.search);
  }
  session.token = sessionStorage.getItem("idemkey-token") || "";
  const by = $<HTMLInputElement>("by");
  by.value = localStorage.getItem("idemkey-by") || "";
  by.addEventListener("change", () => localStorage.setItem("idemkey-by", by.value.trim()));
  for (const name of ["task", "tool", "state"] as const) {
    const select = $<HTMLSelectElement>(`f-${name}`);
    select.addEventListener("change", () => on.setFilter(name, select.value));
  }
  $("f-clear").addEventListener("click", () => {
    view.filter = { task: "", tool: "", state: "" };
    view.offset = 0;
    void refresh();
  });
  $("prev").addEventListener("click", () => {
    view.offset = Math.max(0, view.offset - view.limit);
    void refresh();
  });
  $("next").addEventListener("click", () => {
    view.offset += view.limit;
    void refresh();
  });
  renderLegend();
  boot();
}

start();
