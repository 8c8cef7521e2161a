/** A Standard Schema as Mastra keeps it on a tool (`toStandardSchema` leaves a zod schema's prototype chain intact). */
interface StandardSchema {
  "~standard": { validate: (value: unknown) => ValidationResult | Promise<ValidationResult> };
}
type ValidationResult = { value: unknown } | { issues: readonly unknown[] };

/**
 * A tool's schema, checking a value exactly as before but handing it on as it came, rather than as the schema makes
 * it: the wrapped tool's own `execute` applies the tool's schemas already. For the input, so that the key is made
 * from what the model (or the step) sent: a default the schema generates (`z.string().default(() => randomUUID())`)
 * would otherwise be drawn anew on every replay and give the call a new key. For the output, so that a replayed
 * output reaches `toModelOutput` as the object the wrapped `execute` returned, which it recognises.
 *
 * Built as Mastra builds its own zod wrapper (`Object.create` over the schema), so that what Mastra reads of a zod
 * schema (its shape, for the model's JSON Schema and its input repairs) is the original's.
 */
export function passThrough<S>(schema: S): S {
  if (typeof schema !== "object" || schema === null || !("~standard" in schema)) return schema;
  const standard = (schema as StandardSchema)["~standard"];
  const passthrough = (value: unknown) => (result: ValidationResult) =>
    "value" in result ? { value } : result;
  const wrapper = Object.create(schema) as S;
  Object.defineProperty(wrapper, "~standard", {
    value: {
      ...standard,
      validate: (value: unknown) => {
        const result = standard.validate(value);
        return result instanceof Promise ? result.then(passthrough(value)) : passthrough(value)(result);
      },
    },
    enumerable: true,
  });
  return wrapper;
}
