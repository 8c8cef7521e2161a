import { describe, expect, it } from "vitest";
import { StoreError } from "../../src/errors/index.js";
import { script, scriptRunner } from "../../src/redis/client.js";
import { hashTag } from "../../src/redis/cluster.js";
import { isRefused, retryRefused } from "../../src/redis/refused.js";
import { guardStore } from "../../src/store/guard.js";

describe("Redis replies that refuse a command without running it", () => {
  it("are the cluster's redirections, a cluster or node not ready, and a replica's refusal", () => {
    for (const message of [
      "TRYAGAIN Multiple keys request during rehashing of slot",
      "ASK 9172 127.0.0.1:30357",
      "MOVED 9172 127.0.0.1:30357",
      "CLUSTERDOWN The cluster is down",
      "LOADING Redis is loading the dataset in memory",
      "READONLY You can't write against a read only replica.",
      "NOREPLICAS Not enough good replicas to write.",
      "ERR Script attempted to access a non local key in a cluster node script: 1234, on @user_script:5.",
      "Too many Cluster redirections. Last error: ReplyError: TRYAGAIN Multiple keys request during rehashing of slot",
    ]) {
      expect(isRefused(new Error(message)), message).toBe(true);
    }
    const maxRedirections = new Error("Too many Cluster redirections", {
      cause: new Error("ASK 1 127.0.0.1:1"),
    });
    expect(isRefused(maxRedirections)).toBe(true);
  });

  it("are not a lost connection, a timeout, a script error or a layout error, whose outcome is unknown or final", () => {
    for (const message of [
      "Connection is closed.",
      "Too many Cluster redirections. Last error: Error: Connection is closed.",
      "Socket closed unexpectedly",
      "",
      "CROSSSLOT Keys in request don't hash to the same slot",
      "IDEMKEY_LAYOUT {x}:r:k is not a hash",
      "ERR user_script:3: Script attempted to access nonexistent global variable",
    ]) {
      expect(isRefused(new Error(message)), message).toBe(false);
    }
    expect(isRefused(new Error("Too many Cluster redirections"))).toBe(false);
  });

  it("are tried again until the operation runs, and the last one is thrown once the budget is spent", async () => {
    let tries = 0;
    const refusedTwice = () =>
      ++tries <= 2 ? Promise.reject(new Error("TRYAGAIN slot moving")) : Promise.resolve("ran");
    expect(await retryRefused(refusedTwice, 10_000)).toBe("ran");
    expect(tries).toBe(3);

    tries = 0;
    const lost = () => {
      tries += 1;
      return Promise.reject(new Error("Connection is closed."));
    };
    await expect(retryRefused(lost, 10_000)).rejects.toThrow("Connection is closed.");
    expect(tries).toBe(1);

    tries = 0;
    const always = () => {
      tries += 1;
      return Promise.reject(new Error("CLUSTERDOWN The cluster is down"));
    };
    await expect(retryRefused(always, 0)).rejects.toThrow("CLUSTERDOWN");
    expect(tries).toBe(1);
  });
});

describe("hash tags", () => {
  it("are the text between the first { and the next }, when not empty", () => {
    expect(hashTag("{idemkey}:")).toBe("idemkey");
    expect(hashTag("app:{jobs}:{x}:")).toBe("jobs");
    expect(hashTag("idemkey:")).toBeUndefined();
    expect(hashTag("{}idemkey:")).toBeUndefined();
    expect(hashTag("{idemkey:")).toBeUndefined();
    expect(hashTag("}{a}")).toBe("a");
  });
});

describe("a StoreError from a driver error without a message", () => {
  it("names the error's class instead of saying 'failed: .'", async () => {
    class TimeoutError extends Error {}
    const error = await guardStore("redis", "update", "k", () => Promise.reject(new TimeoutError())).catch(
      (e: unknown) => e,
    );
    expect(error).toBeInstanceOf(StoreError);
    expect((error as Error).message).toMatch(
      /^redis store: update of key "k" failed: TimeoutError with no message\./,
    );
  });
});

describe("a script the node has not seen", () => {
  it("is sent by source after NOSCRIPT, also when ioredis Cluster wraps it after its redirections", async () => {
    for (const message of [
      "NOSCRIPT No matching script. Please use EVAL.",
      "Too many Cluster redirections. Last error: ReplyError: NOSCRIPT No matching script. Please use EVAL.",
    ]) {
      const sent: string[] = [];
      const client = {
        evalsha: async () => {
          sent.push("evalsha");
          throw new Error(message);
        },
        eval: async () => {
          sent.push("eval");
          return "ran";
        },
      };
      expect(await scriptRunner(client).run(script("return 1"), ["{k}"], [])).toBe("ran");
      expect(sent).toEqual(["evalsha", "eval"]);
    }
  });
});
