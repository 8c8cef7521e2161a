import { describe, expect, it } from "vitest";
import { runCli } from "../support/cli.js";

describe("idemkey gateway: bad input is one line and exit 2", () => {
  it.each([
    [["gateway"], /missing the gateway's mode/],
    [["gateway", "ftp"], /unknown gateway mode "ftp"/],
    [["gateway", "mcp", "--", "node"], /missing --store/],
    [["gateway", "mcp", "--store", "sqlite:/tmp/x.db"], /missing the upstream server: -- <command>/],
    [
      ["gateway", "mcp", "--store", "sqlite:/tmp/x.db", "--wait-ms", "soon", "--", "node"],
      /--wait-ms must be a whole number/,
    ],
    [["gateway", "mcp", "--store", "sqlite:/tmp/x.db", "--bogus", "--", "node"], /Unknown option '--bogus'/],
    [["gateway", "mcp", "--store", "ftp://x", "--", "node"], /--store ftp:\/\/x/],
    [["gateway", "mcp", "--store", "sqlite:/no/such/dir/x.db", "--", "node"], /no directory \/no\/such\/dir/],
  ])("%j", async (args, message) => {
    const { code, stdout, stderr } = await runCli(args);
    expect(code).toBe(2);
    expect(stdout).toBe("");
    expect(stderr.trim().split("\n")).toHaveLength(1);
    expect(stderr).toMatch(message);
  });
});
