import { session } from "./api.js";
import { $, el } from "./dom.js";

export interface DialogButton {
  label: string;
  id?: string;
  primary?: boolean;
  danger?: boolean;
  /** Throw (or reject) to show the error in the dialog and keep it open. */
  run(): unknown;
}

export function dialog(title: string, body: Node[], buttons: DialogButton[]): void {
  $("dlg-title").textContent = title;
  $("dlg-body").replaceChildren(...body);
  $("dlg-error").hidden = true;
  $("dlg-buttons").replaceChildren(
    el("button", { type: "button", id: "dlg-cancel", onclick: closeDialog }, "Cancel"),
    ...buttons.map((b, i) =>
      el(
        "button",
        {
          type: "button",
          id: b.id ?? `dlg-ok${i ? i : ""}`,
          class: b.primary ? "primary" : b.danger ? "danger" : "",
          onclick: () => run(b),
        },
        b.label,
      ),
    ),
  );
  const dlg = $<HTMLDialogElement>("dlg");
  if (!dlg.open) dlg.showModal();
}

function run(b: DialogButton): void {
  const buttons = $("dlg-buttons").querySelectorAll("button");
  try {
    const p = b.run();
    if (p instanceof Promise) {
      for (const x of buttons) x.disabled = true;
      p.catch(showError).finally(() => {
        for (const x of buttons) x.disabled = false;
      });
    }
  } catch (err) {
    showError(err);
  }
}

function showError(err: unknown): void {
  $("dlg-error").textContent = err instanceof Error ? err.message : String(err);
  $("dlg-error").hidden = false;
}

export function closeDialog(): void {
  const dlg = $<HTMLDialogElement>("dlg");
  if (dlg.open) dlg.close();
}

/** Asks for the token `idemkey inspect` printed; `then` runs once one is given. */
export function askToken(then: () => void): void {
  dialog(
    "Token needed",
    [
      el("p", {
        text: "Paste the token that idemkey inspect printed when it started (or the one given with --token).",
      }),
      el("input", { id: "dlg-token", type: "password", style: "width:100%", autocomplete: "off" }),
    ],
    [
      {
        label: "Use this token",
        primary: true,
        run() {
          const v = $<HTMLInputElement>("dlg-token").value.trim();
          if (!v) throw new Error("The token is empty");
          session.token = v;
          sessionStorage.setItem("idemkey-token", v);
          closeDialog();
          then();
        },
      },
    ],
  );
}
