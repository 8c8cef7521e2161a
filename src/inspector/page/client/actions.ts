import type { CallDetail, CallSummary } from "../../views.js";
import { api, needToken, session } from "./api.js";
import { closeDialog, dialog } from "./dialog.js";
import { $, el, stop, toast } from "./dom.js";

/** What an action needs from the page around it. */
export interface ActionHooks {
  /** Shows the call after an action on it succeeded. */
  done(call: CallSummary): Promise<unknown>;
  /** Asks for the token, then runs `then`. */
  askToken(then: () => void): void;
}

/** The buttons for what a person may do to `call` in its state: none on a read-only inspector. */
export function actionButtons(call: CallSummary, hooks: ActionHooks): HTMLButtonElement[] | null {
  if (session.config?.readOnly !== false) return null;
  const withToken = (fn: (call: CallSummary, hooks: ActionHooks) => void) =>
    stop(() => {
      if (session.token) fn(call, hooks);
      else hooks.askToken(() => fn(call, hooks));
    });
  if (call.state === "awaiting_approval") {
    return [
      el(
        "button",
        { type: "button", class: "act primary", "data-action": "approve", onclick: withToken(approve) },
        "Approve",
      ),
      el(
        "button",
        { type: "button", class: "act danger", "data-action": "deny", onclick: withToken(deny) },
        "Deny",
      ),
    ];
  }
  if (call.state === "outcome_unknown") {
    return [
      el(
        "button",
        { type: "button", class: "act", "data-action": "resolve", onclick: withToken(resolveCall) },
        "Resolve…",
      ),
    ];
  }
  return null;
}

function callBox(call: CallSummary): HTMLDListElement {
  return el(
    "dl",
    {},
    el("dt", { text: "Tool" }),
    el("dd", { text: call.tool }),
    el("dt", { text: "Task" }),
    el("dd", {}, el("code", { text: call.taskId })),
    el("dt", { text: "Key" }),
    el("dd", {}, el("code", { text: call.key })),
  );
}

async function send(
  call: CallSummary,
  hooks: ActionHooks,
  verb: "approve" | "deny" | "resolve",
  body: { reason?: string; result?: unknown; retry?: true },
  done: string,
): Promise<unknown> {
  if (!session.token)
    throw new Error("No token: reopen the URL idemkey inspect printed, or reload to paste it");
  const by = $<HTMLInputElement>("by").value.trim() || undefined;
  let answer: { by: string };
  try {
    answer = await api<{ by: string }>(`/api/calls/${call.key}/${verb}`, {
      method: "POST",
      body: { ...body, by },
    });
  } catch (err) {
    if (needToken(err)) {
      session.token = "";
      sessionStorage.removeItem("idemkey-token");
    }
    throw err;
  }
  closeDialog();
  toast(`${done} by ${answer.by}`);
  return hooks.done(call);
}

function approve(call: CallSummary, hooks: ActionHooks): void {
  const argsBox = el("pre", { text: "loading…" });
  api<CallDetail>(`/api/calls/${call.key}`).then(
    (d) => {
      argsBox.textContent = JSON.stringify(JSON.parse(d.argsCanonical), null, 2);
    },
    (err: Error) => {
      argsBox.textContent = err.message;
    },
  );
  dialog(
    `Approve ${call.tool}?`,
    [callBox(call), el("h4", { text: "It will run with these arguments" }), argsBox],
    [
      {
        label: "Approve",
        primary: true,
        id: "dlg-approve",
        run: () => send(call, hooks, "approve", {}, "Approved"),
      },
    ],
  );
}

function deny(call: CallSummary, hooks: ActionHooks): void {
  dialog(
    `Deny ${call.tool}?`,
    [
      callBox(call),
      el("h4", { text: "Reason (recorded, and given to the caller)" }),
      el("textarea", { id: "dlg-reason", placeholder: "why not" }),
    ],
    [
      {
        label: "Deny",
        danger: true,
        id: "dlg-deny",
        run() {
          const reason = $<HTMLTextAreaElement>("dlg-reason").value.trim();
          if (!reason) throw new Error("Say why: the reason is recorded and the caller receives it");
          return send(call, hooks, "deny", { reason }, "Denied");
        },
      },
    ],
  );
}

function resolveCall(call: CallSummary, hooks: ActionHooks): void {
  dialog(
    `Resolve ${call.tool}`,
    [
      callBox(call),
      el("p", {
        text: "The harness lost track of this call and cannot tell whether it took effect. Check the owner's records, then:",
      }),
      el("h4", { text: "It took effect: the result found in the world (JSON), replayed to later calls" }),
      el("textarea", { id: "dlg-result", placeholder: '{"id": "msg_123"}' }),
      el("h4", { text: "It did not take effect: allow the next call with this key to run it" }),
    ],
    [
      {
        label: "Allow a retry",
        id: "dlg-retry",
        run: () => send(call, hooks, "resolve", { retry: true }, "Retry allowed"),
      },
      {
        label: "Record this result",
        primary: true,
        id: "dlg-record",
        run() {
          const text = $<HTMLTextAreaElement>("dlg-result").value.trim();
          if (!text) throw new Error("Paste the result as JSON, or allow a retry");
          let result: unknown;
          try {
            result = JSON.parse(text);
          } catch (e) {
            throw new Error(`The result is not JSON: ${(e as Error).message}`);
          }
          return send(call, hooks, "resolve", { result }, "Result recorded");
        },
      },
    ],
  );
}
