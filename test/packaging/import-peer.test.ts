import { readFileSync } from "node:fs";
import { join } from "node:path";
import { describe, expect, it } from "vitest";
import { MissingPeerError } from "../../src/errors/missing-peer-error.js";
import { importPeer, peerRange } from "../../src/peer/import-peer.js";
import { root } from "./support.js";

const { peerDependencies } = JSON.parse(readFileSync(join(root, "package.json"), "utf8")) as {
  peerDependencies: Record<string, string>;
};

describe("importPeer", () => {
  it("turns the peer's own absence into a MissingPeerError naming subpath, package and range", async () => {
    // A package that is really not installed; being no peer of idemkey's, its range says where to look instead.
    const name = "idemkey-not-installed-";
    const error = await importPeer("idemkey/x", name, () => import(name)).catch((e: unknown) => e);
    expect(error).toBeInstanceOf(MissingPeerError);
    expect(error).toMatchObject({
      name: "MissingPeerError",
      subpath: "idemkey/x",
      package: name,
      range: "(the range in idemkey's peerDependencies)",
      message: `idemkey/x needs ${name} (the range in idemkey's peerDependencies): npm install ${name}`,
    });
    expect((error as Error).cause).toMatchObject({ code: "ERR_MODULE_NOT_FOUND" });
  });

  it("passes through a missing module that is not the peer (one of the peer's own), and any other failure", async () => {
    const inner = await import("idemkey-not-installed-" as string).catch((e: unknown) => e);
    await expect(importPeer("idemkey/sqlite", "better-sqlite3", () => Promise.reject(inner))).rejects.toBe(
      inner,
    );
    const broken = new Error("the package threw while loading");
    await expect(importPeer("idemkey/otel", "@opentelemetry/api", () => Promise.reject(broken))).rejects.toBe(
      broken,
    );
  });

  it("reads every peer's range from package.json, and says where to look for a package it does not list", () => {
    for (const [pkg, range] of Object.entries(peerDependencies)) expect(peerRange(pkg)).toBe(range);
    expect(peerRange("left-pad")).toBe("(the range in idemkey's peerDependencies)");
  });
});
