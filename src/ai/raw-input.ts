import type { FlexibleSchema, Schema } from "ai";

type AsSchema = (schema: FlexibleSchema<unknown> | undefined) => Schema<unknown>;
type JsonSchema = (
  jsonSchema: () => Schema<unknown>["jsonSchema"],
  options: { validate: NonNullable<Schema<unknown>["validate"]> },
) => Schema<unknown>;

/**
 * Remembers, for each input the AI SDK validated with a wrapped tool's schema, the value the model sent before the
 * schema filled defaults in: a default the schema generates (`z.string().default(() => randomUUID())`) is drawn anew
 * on every replay, and would give the same call a new key. Keyed by the validated object, which the SDK hands to
 * `execute` as it is.
 */
export function rawInputs(asSchema: AsSchema, jsonSchema: JsonSchema) {
  const sent = new WeakMap<object, unknown>();
  return {
    /** The tool's schema, validating exactly as before (the model sees the same JSON Schema), noting what was sent. */
    wrap(schema: FlexibleSchema<unknown> | undefined): Schema<unknown> {
      const inner = asSchema(schema);
      return jsonSchema(() => inner.jsonSchema, {
        validate: async (value) => {
          const result = inner.validate ? await inner.validate(value) : { success: true as const, value };
          if (result.success && typeof result.value === "object" && result.value !== null) {
            sent.set(result.value, value);
          }
          return result;
        },
      });
    },
    /** What the model sent for `input`, or `input` itself when the SDK did not validate it through `wrap`. */
    of(input: unknown): unknown {
      return typeof input === "object" && input !== null && sent.has(input) ? sent.get(input) : input;
    },
  };
}
