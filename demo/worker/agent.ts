import { createIdempotentFetch, idempotentFetch } from "../../src/fetch/index.js";
import {
  createHarness,
  type Harness,
  LedgerStateError,
  memoryStore,
  OutcomeUnknownError,
  type Store,
  StoreError,
  type Tool,
  type ToolContext,
} from "../../src/index.js";
import {
  FAULT_HEADER,
  type FromWorker,
  type Job,
  Mode,
  TRACE_HEADER,
  type WorkerConfig,
} from "../protocol.js";
import { CALLS, type CallIndex, type KillPoint } from "../schedule.js";
import { type MessageArgs, makeTools, type Post } from "./tools.js";

/** The same backoff for the naive retries and the harness: four retries, 20 ms doubling to 200 ms. */
const RETRY = { retries: 4, minDelayMs: 20, maxDelayMs: 200 };

/**
 * Sends the request without any key: the keyless modes classify answers exactly as `idempotentFetch` does (so
 * that retries behave the same), but the owner never sees an `Idempotency-Key`.
 */
const keylessFetch = createIdempotentFetch({
  fetch: (input, init) => {
    const headers = new Headers(init?.headers);
    headers.delete("idempotency-key");
    return fetch(input, { ...init, headers });
  },
});

export interface Agent {
  run(job: Job): Promise<void>;
}

/**
 * The scripted, seeded "model" and its harness: for each task it sends a status message, opens a pull request
 * (whose title it words anew on every replay), charges the customer, and sends the same status message again.
 * Faults are played at the hook points the job names; a kill reports itself and then SIGKILLs this process.
 */
export function makeAgent(
  config: WorkerConfig,
  ledger: Store | undefined,
  report: (message: FromWorker) => Promise<void>,
): Agent {
  const { mode } = config;
  const send = mode === Mode.idemkey ? idempotentFetch : keylessFetch;
  /** The call being made: this worker runs one task at a time, so the fault hooks can look it up here. */
  let current: { job: Job; call: CallIndex; netFired: Set<number> } | undefined;

  async function kill(call: CallIndex, point: KillPoint): Promise<void> {
    const job = current!.job;
    if (!job.kills.some((k) => k.call === call && k.point === point)) return;
    await report({ t: "dying", task: job.task.id, call, tool: CALLS[call].tool, point });
    process.kill(process.pid, "SIGKILL");
    await new Promise(() => {});
  }

  const post: Post = async (owner, path, body, ctx) => {
    const { job, call, netFired } = current!;
    await kill(call, "before-send");
    const headers: Record<string, string> = {
      [TRACE_HEADER]: `${job.copy}${job.run}.${call}.${ctx.attempt}`,
    };
    const net = job.net.find((n) => n.call === call);
    if (net && !netFired.has(call)) {
      netFired.add(call);
      headers[FAULT_HEADER] = net.kind;
      await report({ t: "fault", task: job.task.id, call, kind: net.kind });
    }
    const response = await send(`${config.urls[owner]}${path}`, { method: "POST", body, headers }, ctx);
    const json: unknown = await response.json();
    await kill(call, "after-effect");
    return json;
  };

  const tools = makeTools(post);
  const harnessWith = (store: Store | undefined) =>
    createHarness({
      store,
      leaseMs: config.leaseMs,
      retry: RETRY,
      wait: { minDelayMs: 10, maxDelayMs: 100 },
    });
  // The local mode's ledger lives in memory for one job, as if each job had a worker of its own: kept per process,
  // whether a replay found it would depend on which worker happened to be free, and the numbers on timing.
  const shared: Harness | undefined = mode === Mode.idemkey ? harnessWith(ledger) : undefined;
  const harnessFor = (): Harness | undefined =>
    mode === Mode.naive ? undefined : (shared ?? harnessWith(memoryStore()));

  /** Naive retries: the same request again after any retryable failure, with nothing that could recognise it. */
  async function naive<A, R>(tool: Tool<A, R>, args: A, taskId: string): Promise<R> {
    for (let attempt = 1; ; attempt++) {
      const ctx: ToolContext = {
        idempotencyKey: "unused",
        taskId,
        tool: tool.name,
        attempt,
        signal: new AbortController().signal,
      };
      try {
        return await tool.run(args, ctx);
      } catch (error) {
        if (attempt > RETRY.retries || (error as { retryable?: unknown }).retryable === false) throw error;
        await new Promise((resolve) =>
          setTimeout(resolve, Math.min(RETRY.maxDelayMs, RETRY.minDelayMs * 2 ** (attempt - 1))),
        );
      }
    }
  }

  /**
   * Through the harness. An unguarded message whose outcome is unknown is never sent again blindly: the agent asks
   * the email owner what it sent (the messages with this content, oldest first) and records the answer with
   * `harness.resolve` before calling again.
   */
  async function viaHarness<A, R>(h: Harness, tool: Tool<A, R>, args: A, job: Job, call: CallIndex) {
    const step = CALLS[call].step;
    for (let tries = 1; ; tries++) {
      try {
        return await h.call(job.task.id, tool, args, step === undefined ? undefined : { step });
      } catch (error) {
        if (error instanceof StoreError && tries <= 50) {
          // The ledger is down (the store-fault mode): calling again with the same key is safe once it answers.
          await new Promise((resolve) => setTimeout(resolve, Math.min(500, 20 * 2 ** Math.min(tries, 5))));
          continue;
        }
        if (!(error instanceof OutcomeUnknownError) || tries > 20) throw error;
        await report({ t: "unknown", task: job.task.id, call, tool: tool.name });
        const sent = await sentMessages(args as MessageArgs);
        // The task's messages are sent in order: step n took effect when at least n of them exist.
        const mine = step === undefined ? undefined : sent[step - 1];
        try {
          await whileStoreDown(() =>
            h.resolve(error.key, mine ? { result: mine } : { retry: true }, { by: "demo agent" }),
          );
        } catch (resolveError) {
          // Another worker running the same task resolved it first.
          if (!(resolveError instanceof LedgerStateError)) throw resolveError;
        }
      }
    }
  }

  /** Calls `fn` again while it fails with a StoreError (the store-fault mode): safe, every write is conditional. */
  async function whileStoreDown<T>(fn: () => Promise<T>): Promise<T> {
    for (let tries = 1; ; tries++) {
      try {
        return await fn();
      } catch (error) {
        if (!(error instanceof StoreError) || tries > 50) throw error;
        await new Promise((resolve) => setTimeout(resolve, Math.min(500, 20 * 2 ** Math.min(tries, 5))));
      }
    }
  }

  async function sentMessages(args: MessageArgs): Promise<{ id: string }[]> {
    const query = new URLSearchParams({ to: args.to, subject: args.subject, text: args.text });
    const response = await fetch(`${config.urls.email}/messages?${query}`);
    if (!response.ok) throw new Error(`the email owner answered ${response.status} to the check`);
    return ((await response.json()) as { messages: { id: string }[] }).messages;
  }

  return {
    async run(job) {
      const { task } = job;
      // The model re-samples the PR step on every replay and words the title differently each time.
      const sample = job.copy === "p" ? job.run - 1 : job.run;
      const message: MessageArgs = { to: task.to, subject: task.subject, text: task.text };
      const harness = harnessFor();
      const invoke = <A, R>(tool: Tool<A, R>, args: A, call: CallIndex) =>
        harness === undefined ? naive(tool, args, task.id) : viaHarness(harness, tool, args, job, call);
      const title = task.titles[sample % task.titles.length]!;
      const steps: { call: CallIndex; run: () => Promise<unknown> }[] = [
        { call: 0, run: () => invoke(tools.sendMessage, message, 0) },
        { call: 1, run: () => invoke(tools.openPullRequest, { repo: task.repo, head: task.head, title }, 1) },
        {
          call: 2,
          run: () =>
            invoke(
              tools.createCharge,
              { task: task.id, customer: task.customer, amountCents: task.amountCents },
              2,
            ),
        },
        { call: 3, run: () => invoke(tools.sendMessage, message, 3) },
      ];
      current = { job, call: 0, netFired: new Set() };
      for (const { call, run } of steps) {
        current.call = call;
        await kill(call, "before-call");
        await report({ t: "call", tool: CALLS[call].tool });
        await run();
        await kill(call, "after-ledger");
      }
    },
  };
}
