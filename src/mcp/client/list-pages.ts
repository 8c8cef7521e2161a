import { nextTurn } from "../../store/yield.js";
import type { McpToolDefinition } from "../types.js";
import { McpListError } from "./list-error.js";

/** What the pager reads of a client: v1's one-page `listTools` and, when there is one, the server's name. */
export interface PagedClient<D extends McpToolDefinition> {
  // biome-ignore lint/suspicious/noExplicitAny: the two SDK lines' options parameters differ; either is accepted.
  listTools(params?: { cursor?: string }, ...rest: any[]): Promise<{ tools: D[]; nextCursor?: string }>;
  getServerVersion?(): { name?: string } | undefined;
}

/**
 * Every tool a server lists, following `nextCursor` (v1's client answers one page at a time; v2's walks the pages
 * itself, under its own cap, and answers without one). Bounded as every loop over a peer's answers is
 * (docs/integration-contract.md, "Peers are bounded"): at most `maxPages` pages, never a cursor twice, and a turn of
 * the event loop between pages, since an in-memory transport answers through microtasks that would starve timers.
 */
export async function listAllTools<D extends McpToolDefinition>(
  client: PagedClient<D>,
  maxPages: number,
): Promise<D[]> {
  const definitions: D[] = [];
  const asked = new Set<string>();
  let cursor: string | undefined;
  for (let pages = 1; ; pages++) {
    const page = await client.listTools(cursor === undefined ? undefined : { cursor });
    definitions.push(...page.tools);
    cursor = page.nextCursor;
    if (cursor === undefined) return definitions;
    const stop = asked.has(cursor) ? "repeated_cursor" : pages >= maxPages ? "max_pages" : undefined;
    if (stop !== undefined) {
      throw new McpListError({ server: serverName(client), pages, why: stop, maxPages });
    }
    asked.add(cursor);
    await nextTurn();
  }
}

function serverName(client: PagedClient<McpToolDefinition>): string | undefined {
  try {
    const name = client.getServerVersion?.()?.name;
    return typeof name === "string" ? name : undefined;
  } catch {
    // A name is for the message only: a client that cannot give one must not hide the listing's failure.
    return undefined;
  }
}
