import { MissingPeerError } from "../errors/missing-peer-error.js";

/**
 * Imports a subpath's optional peer dependency at run time (its types are imported statically, which costs nothing
 * at run time). A static import of a missing package fails while Node links the module graph, before any idemkey
 * code runs, with an error that names neither the subpath nor the versions to install; this names both.
 *
 * `importer` is the literal `() => import("pkg")`, so that bundlers still see the dependency.
 */
export async function importPeer<M>(
  subpath: string,
  pkg: string,
  range: string,
  importer: () => Promise<M>,
): Promise<M> {
  try {
    return await importer();
  } catch (error) {
    const code = (error as { code?: string } | null)?.code;
    if (
      (code === "ERR_MODULE_NOT_FOUND" || code === "MODULE_NOT_FOUND") &&
      String(error).includes(`'${pkg}'`)
    ) {
      throw new MissingPeerError(subpath, pkg, range, { cause: error });
    }
    throw error;
  }
}
