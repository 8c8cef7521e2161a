/**
 * DOM building for the page. Ledger data goes in through `textContent` and attributes only, never as markup: a
 * tool name or an argument is text, whatever it contains.
 */

type Listener = (event: Event) => void;
export type Attrs = Record<string, string | number | boolean | null | undefined | Listener>;
export type Child = Node | string | number | null | undefined | false | Child[];

export function $<T extends HTMLElement = HTMLElement>(id: string): T {
  const node = document.getElementById(id);
  if (node === null) throw new Error(`The page has no #${id}`);
  return node as T;
}

export function el<K extends keyof HTMLElementTagNameMap>(
  tag: K,
  attrs: Attrs = {},
  ...children: Child[]
): HTMLElementTagNameMap[K] {
  const node = document.createElement(tag);
  for (const [name, v] of Object.entries(attrs)) {
    if (v === undefined || v === null || v === false) continue;
    if (typeof v === "function") node.addEventListener(name.slice(2), v);
    else if (name === "text") node.textContent = String(v);
    else if (name === "class") node.className = String(v);
    // Through the CSSOM: the page's Content-Security-Policy refuses style attributes.
    else if (name === "style") node.style.cssText = String(v);
    else node.setAttribute(name, v === true ? "" : String(v));
  }
  const add = (child: Child): void => {
    if (child === null || child === undefined || child === false) return;
    if (Array.isArray(child)) child.forEach(add);
    else node.append(child instanceof Node ? child : document.createTextNode(String(child)));
  };
  children.forEach(add);
  return node;
}

const NS = "http://www.w3.org/2000/svg";

export function sv<K extends keyof SVGElementTagNameMap>(
  tag: K,
  attrs: Record<string, string | number>,
  parent?: Element,
): SVGElementTagNameMap[K] {
  const node = document.createElementNS(NS, tag);
  for (const [name, v] of Object.entries(attrs)) {
    if (name === "text") node.textContent = String(v);
    else if (name === "title") {
      const title = document.createElementNS(NS, "title");
      title.textContent = String(v);
      node.append(title);
    } else if (name === "style") node.style.cssText = String(v);
    else if (name === "fill" || name === "stroke") node.style[name] = String(v);
    else node.setAttribute(name, String(v));
  }
  parent?.append(node);
  return node;
}

/** Wraps a click handler so that a button inside a table row does not also select the row. */
export function stop(fn: () => void): Listener {
  return (event) => {
    event.stopPropagation();
    fn();
  };
}

let toastTimer: ReturnType<typeof setTimeout> | undefined;

export function toast(text: string, bad = false): void {
  const t = $("toast");
  t.textContent = text;
  t.style.background = bad ? "var(--denied)" : "";
  t.className = "on";
  clearTimeout(toastTimer);
  toastTimer = setTimeout(
    () => {
      t.className = "";
    },
    bad ? 6000 : 3000,
  );
}

function copy(text: string): void {
  const fallback = () => {
    const area = el("textarea", { style: "position:fixed;opacity:0" });
    area.value = text;
    document.body.append(area);
    area.select();
    try {
      // The deprecated path is the only one left on a page served over plain http from another host.
      document.execCommand("copy");
      toast("Key copied");
    } catch {
      toast("Copy failed: select the key", true);
    }
    area.remove();
  };
  if (navigator.clipboard && window.isSecureContext) {
    navigator.clipboard.writeText(text).then(() => toast("Key copied"), fallback);
  } else fallback();
}

function copyIcon(): SVGSVGElement {
  const icon = sv("svg", { viewBox: "0 0 16 16", "aria-hidden": "true" });
  sv("rect", { x: 5.5, y: 5.5, width: 8, height: 8, rx: 1.5 }, icon);
  sv("path", { d: "M10.5 3.5v-1a1 1 0 0 0 -1 -1h-6a1 1 0 0 0 -1 1v6a1 1 0 0 0 1 1h1" }, icon);
  return icon;
}

export function copyButton(key: string): HTMLButtonElement {
  return el(
    "button",
    {
      type: "button",
      class: "copy",
      title: "Copy the full key",
      "aria-label": "copy key",
      onclick: stop(() => copy(key)),
    },
    copyIcon(),
  );
}
