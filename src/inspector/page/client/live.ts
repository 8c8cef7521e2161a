import { headers } from "./api.js";
import { $ } from "./dom.js";

/** Whether the change stream is open; a token given later starts it if not. */
export const live = { on: false };

function setLive(on: boolean, text: string): void {
  live.on = on;
  $("live").className = `live${on ? "" : " off"}`;
  $("live").textContent = text;
}

/**
 * Live updates: server-sent events read through fetch (not EventSource), so that the token header can go along.
 * Each `change` event calls `onChange`; a dropped stream is opened again after 2 s.
 */
export function stream(onChange: () => void): void {
  const open = async () => {
    const res = await fetch("/api/stream", {
      headers: headers({ accept: "text/event-stream" }),
      cache: "no-store",
      credentials: "omit",
    });
    // The stream needs the token even on loopback; without one, say so instead of retrying in vain.
    if (res.status === 403) {
      setLive(false, "live view needs the token");
      return;
    }
    if (!res.ok || !res.body) throw new Error(`HTTP ${res.status}`);
    setLive(true, "live");
    const reader = res.body.getReader();
    const decoder = new TextDecoder();
    let buffer = "";
    for (;;) {
      const chunk = await reader.read();
      if (chunk.done) throw new Error("stream ended");
      buffer += decoder.decode(chunk.value, { stream: true });
      for (let at = buffer.indexOf("\n\n"); at >= 0; at = buffer.indexOf("\n\n")) {
        const block = buffer.slice(0, at);
        buffer = buffer.slice(at + 2);
        let event = "message";
        for (const line of block.split("\n")) if (line.startsWith("event: ")) event = line.slice(7);
        if (event === "change") {
          setLive(true, "live");
          onChange();
        }
        if (event === "store-error") setLive(false, "store not answering");
      }
    }
  };
  open().catch(() => {
    setLive(false, "reconnecting…");
    setTimeout(() => stream(onChange), 2000);
  });
}
