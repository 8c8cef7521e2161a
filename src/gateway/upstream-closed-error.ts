import { IdemkeyError } from "../errors/idemkey-error.js";

/**
 * The upstream MCP server went away (its process exited, its connection closed) or did not answer in time while
 * the gateway waited for its answer to a keyed call. The call may have acted: its key is recorded `outcome_unknown`.
 * With `noEffect: true` the gateway knows nothing was sent (the upstream was gone before the call).
 */
export class UpstreamClosedError extends IdemkeyError {
  override name = "UpstreamClosedError" as const;
  readonly noEffect: boolean;

  constructor(message: string, noEffect = false) {
    super(message);
    this.noEffect = noEffect;
  }
}
