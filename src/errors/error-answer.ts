import { brand } from "./brand.js";
import { IdemkeyError } from "./idemkey-error.js";
import type { RetryHints } from "./retry-hints.js";

export interface ErrorAnswerOptions extends ErrorOptions {
  /** The tool's name, for the message. */
  tool: string;
  /** The framework's own words for the error, for the message (an MCP result's text, a message's content). */
  text: string;
  /**
   * Someone who knows (the owner's refusal, a trusted mark) said that nothing happened. Left out, the answer is
   * judged by the tool's declared `noEffect` classifier, and without one it says nothing about the effect.
   * @default undefined
   */
  noEffect?: boolean;
}

/**
 * A tool answered with an error instead of throwing one (an MCP `isError` result, a LangChain `ToolMessage` with
 * `status: "error"`): adapters throw it from `run` so that the harness applies the one rule to it (see
 * docs/integration-contract.md), and hand `answer` back unchanged when the call is released. Not retried within a
 * call: the model, which reads the answer, decides what comes next.
 */
export class ErrorAnswer<T = unknown> extends IdemkeyError implements RetryHints {
  // A string, not the literal: an adapter's subclass (`McpToolError`) keeps its own name.
  override name: string = "ErrorAnswer";
  /** The framework's error answer, as the tool returned it. */
  readonly answer: T;
  readonly tool: string;
  /** The framework's own words for the error, as the adapter read them: what the model reads if the call is held. */
  readonly text: string;
  readonly retryable = false;
  readonly noEffect: boolean | undefined;

  constructor(answer: T, options: ErrorAnswerOptions) {
    const { tool, text, noEffect, ...rest } = options;
    super(
      `The tool "${tool}" answered with an error: ${text}`,
      "cause" in rest ? { cause: rest.cause } : undefined,
    );
    this.answer = answer;
    this.tool = tool;
    this.text = text;
    this.noEffect = noEffect;
  }
}
brand(ErrorAnswer, "ErrorAnswer");
