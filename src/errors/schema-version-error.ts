import { brand } from "./brand.js";
import { IdemkeyError } from "./idemkey-error.js";

/**
 * A store's table was created or migrated by a newer idemkey than the one running. Older code cannot know what the
 * newer columns mean, so it refuses to touch the table: upgrade idemkey in this process, or point it at another table.
 */
export class SchemaVersionError extends IdemkeyError {
  override name = "SchemaVersionError" as const;
  /** The table whose recorded schema version is too new. */
  readonly table: string;
  /** The version recorded in the database. */
  readonly found: number;
  /** The newest version this idemkey understands. */
  readonly supported: number;

  constructor(table: string, found: number, supported: number, options?: ErrorOptions) {
    super(
      `table "${table}" has schema version ${found}, but this idemkey understands up to ${supported}: ` +
        `upgrade idemkey here, or configure another table`,
      options,
    );
    this.table = table;
    this.found = found;
    this.supported = supported;
  }
}
brand(SchemaVersionError, "SchemaVersionError");
