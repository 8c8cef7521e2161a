import { readFileSync } from "node:fs";
import { MissingPeerError } from "../errors/missing-peer-error.js";

/**
 * Imports a subpath's optional peer dependency at run time (its types are imported statically, which costs nothing
 * at run time). A static import of a missing package fails while Node links the module graph, before any idemkey
 * code runs, with an error that names neither the subpath nor the versions to install; this names both, the versions
 * as idemkey's package.json declares them, so that the message cannot drift from what npm checks.
 *
 * `importer` is the literal `() => import("pkg")`, so that bundlers still see the dependency.
 */
export async function importPeer<M>(subpath: string, pkg: string, importer: () => Promise<M>): Promise<M> {
  try {
    return await importer();
  } catch (error) {
    const code = (error as { code?: string } | null)?.code;
    if (
      (code === "ERR_MODULE_NOT_FOUND" || code === "MODULE_NOT_FOUND") &&
      String(error).includes(`'${pkg}'`)
    ) {
      throw new MissingPeerError(subpath, pkg, peerRange(pkg), { cause: error });
    }
    throw error;
  }
}

/**
 * The range of `pkg` in idemkey's peerDependencies. Read only when a peer is missing; package.json is two folders up
 * both from src/peer/ and from dist/peer/. A bundle that left it behind still gets a message saying where to look.
 */
export function peerRange(pkg: string): string {
  try {
    const manifest = JSON.parse(readFileSync(new URL("../../package.json", import.meta.url), "utf8")) as {
      name?: unknown;
      peerDependencies?: Record<string, unknown>;
    };
    const range = manifest.name === "idemkey" ? manifest.peerDependencies?.[pkg] : undefined;
    if (typeof range === "string") return range;
  } catch {
    // No package.json beside the code (a bundle): fall through.
  }
  return "(the range in idemkey's peerDependencies)";
}
