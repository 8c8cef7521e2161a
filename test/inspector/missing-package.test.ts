import { describe, expect, it } from "vitest";
import { StoreUrlError } from "../../src/inspector/index.js";
import { importPeer } from "../../src/inspector/store-url.js";

describe("a store URL whose client package is not installed", () => {
  it("is a StoreUrlError saying what to install, with the URL's password masked", async () => {
    // A package that is really not installed, imported as openStore imports pg and ioredis.
    const name = "idemkey-inspector-not-installed";
    const error = await importPeer("postgres://u:***@db/x", name, () => import(name)).catch(
      (e: unknown) => e,
    );
    expect(error).toBeInstanceOf(StoreUrlError);
    expect((error as Error).message).toBe(
      `--store postgres://u:***@db/x needs the "${name}" package: npm install ${name}`,
    );
  });

  it("passes any other failure through", async () => {
    const broken = new Error("the package threw while loading");
    await expect(importPeer("redis://h", "ioredis", () => Promise.reject(broken))).rejects.toBe(broken);
  });
});
