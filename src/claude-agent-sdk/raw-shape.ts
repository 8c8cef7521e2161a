/**
 * A zod field as far as this file reads it, from zod 3 or zod 4 (the Claude Agent SDK takes either): a default
 * (`.default(...)`) says so in its definition and can give back the type it wraps.
 */
interface Field {
  _def?: { typeName?: string; defaultValue?: unknown };
  _zod?: { def?: { type?: string; defaultValue?: unknown } };
  description?: string;
  removeDefault(): Field;
  optional(): Field;
  describe(description: string): Field;
  meta?: (meta?: { [key: string]: unknown }) => unknown;
  parseAsync(value: unknown): Promise<unknown>;
}

/** A tool's input shape split for keying: what the SDK validates with, and the defaults the handler still gets. */
export interface RawShape {
  /** The shape with every top-level default made optional instead: the SDK's parse leaves a missing field missing. */
  shape: { [name: string]: unknown };
  /** Fills in the defaults the stripped shape left out, as the tool's own shape would have. */
  withDefaults(args: unknown): Promise<unknown>;
}

/**
 * The SDK's MCP server parses a call's arguments with the tool's shape before the handler runs, so a generated
 * default (`z.string().default(() => randomUUID())`) would be a new value, and a new key, on every replay. Handed
 * this shape instead, the handler sees the arguments Claude sent and keys them; the defaults are applied after.
 * What Claude lists stays the same: each stripped field keeps its description and, on zod 4, its default as a hint.
 */
export function rawShape(shape: { [name: string]: unknown }): RawShape {
  const defaults = new Map<string, Field>();
  const stripped: { [name: string]: unknown } = {};
  for (const [name, value] of Object.entries(shape)) {
    const field = value as Field;
    if (!isDefault(field)) {
      stripped[name] = value;
      continue;
    }
    defaults.set(name, field);
    stripped[name] = listedAlike(field);
  }
  return {
    shape: defaults.size === 0 ? shape : stripped,
    async withDefaults(args) {
      if (defaults.size === 0 || typeof args !== "object" || args === null) return args;
      const filled: { [name: string]: unknown } = { ...(args as object) };
      for (const [name, field] of defaults) {
        if (filled[name] === undefined) filled[name] = await field.parseAsync(undefined);
      }
      return filled;
    },
  };
}

function isDefault(field: Field): boolean {
  if (typeof field !== "object" || field === null || typeof field.removeDefault !== "function") return false;
  return field._zod?.def?.type === "default" || field._def?.typeName === "ZodDefault";
}

function listedAlike(field: Field): Field {
  const optional = field.removeDefault().optional();
  if (field._zod !== undefined && typeof field.meta === "function") {
    // zod 4 lists a field's metadata, description included, as JSON Schema keywords: the default goes in as one.
    const meta = (field.meta() as { [key: string]: unknown } | undefined) ?? {};
    return (optional.meta as (meta: object) => Field)({ ...meta, default: field._zod.def?.defaultValue });
  }
  return field.description === undefined ? optional : optional.describe(field.description);
}
