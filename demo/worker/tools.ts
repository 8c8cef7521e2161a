import { defineTool, type ToolContext } from "../../src/index.js";

export interface PullRequestArgs {
  repo: string;
  head: string;
  title: string;
}
export interface ChargeArgs {
  task: string;
  customer: string;
  amountCents: number;
}
export interface MessageArgs {
  to: string;
  subject: string;
  text: string;
}

/** How a tool reaches its owner: `POST` the body to the owner's path and hand back the answer's JSON. */
export type Post = (
  owner: "githost" | "payments" | "email",
  path: string,
  body: Record<string, unknown>,
  ctx: ToolContext,
) => Promise<unknown>;

/**
 * The agent's three tools. Only the `identity` of openPullRequest makes a reworded title the same call; the
 * message tool is `unguarded` because its owner honours no key.
 */
export function makeTools(post: Post) {
  return {
    openPullRequest: defineTool({
      name: "openPullRequest",
      effect: "keyed",
      identity: (args: PullRequestArgs) => ({ repo: args.repo, head: args.head }),
      run: async (args, ctx) =>
        (await post("githost", "/pulls", { ...args }, ctx)) as { number: number; url: string; title: string },
    }),
    createCharge: defineTool({
      name: "createCharge",
      effect: "keyed",
      run: async (args: ChargeArgs, ctx) =>
        (await post(
          "payments",
          "/charges",
          {
            customer: args.customer,
            amountCents: args.amountCents,
            currency: "usd",
            metadata: { task: args.task },
          },
          ctx,
        )) as { id: string; amountCents: number },
    }),
    sendMessage: defineTool({
      name: "sendMessage",
      effect: "unguarded",
      run: async (args: MessageArgs, ctx) =>
        (await post("email", "/messages", { ...args }, ctx)) as { id: string },
    }),
  };
}

export type Tools = ReturnType<typeof makeTools>;
