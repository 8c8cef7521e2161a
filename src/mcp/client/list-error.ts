import { brand, branded } from "../../errors/brand.js";
import { IdemkeyError } from "../../errors/idemkey-error.js";

/** Why a listing was cut short: more pages than `maxPages`, or a `nextCursor` the server had already given. */
export type McpListStop = "max_pages" | "repeated_cursor";

export interface McpListErrorData extends ErrorOptions {
  /** The server's name as it introduced itself (`client.getServerVersion().name`), when it did. */
  server: string | undefined;
  /** The pages read before the listing stopped. */
  pages: number;
  why: McpListStop;
  /** The `maxPages` in force. */
  maxPages: number;
}

/**
 * An MCP server's `tools/list` pages did not end: it kept answering a `nextCursor` past `maxPages` pages, or
 * answered a cursor it had already given (which would loop forever). `mcpTools` stops there instead of reading on
 * (a server that never ends its listing would otherwise take the memory and the event loop). Raise `maxPages` for a
 * server that truly lists that many pages; otherwise its pagination is broken.
 */
export class McpListError extends IdemkeyError {
  override name = "McpListError" as const;
  readonly server: string | undefined;
  readonly pages: number;
  readonly why: McpListStop;
  readonly retryable = false;

  constructor(data: McpListErrorData) {
    const { server, pages, why, maxPages, ...options } = data;
    const who = server === undefined ? "The MCP server" : `The MCP server ${JSON.stringify(server)}`;
    super(
      why === "repeated_cursor"
        ? `${who} answered page ${pages} of its tool list with a cursor it had already given, so the listing ` +
            "would never end; its pagination is broken."
        : `${who} had more tool list pages after ${pages} (maxPages ${maxPages}); raise maxPages if it truly lists ` +
            "that many tools, or its pagination is broken.",
      "cause" in options ? { cause: options.cause } : undefined,
    );
    this.server = server;
    this.pages = pages;
    this.why = why;
  }
}
brand(McpListError, "McpListError");

/** Whether `error` is an `McpListError`, from this copy of idemkey or another, in any realm. */
export function isMcpListError(error: unknown): error is McpListError {
  return branded(error, "McpListError");
}
