/** A Standard Schema as Mastra keeps it on a tool (`toStandardSchema` leaves a zod schema's prototype chain intact). */
interface StandardSchema {
  "~standard": { validate: (value: unknown) => ValidationResult | Promise<ValidationResult> };
}
type ValidationResult = { value: unknown } | { issues: readonly unknown[] };

/**
 * The tool's input schema, checking what the model (or the step) sent exactly as before but handing the input on as
 * it came, rather than as the schema fills it: a default the schema generates (`z.string().default(() =>
 * randomUUID())`) would otherwise be drawn anew on every replay and give the call a new key. The wrapped tool keys
 * that input and calls the tool's own `execute`, whose validation then applies the schema as it always did.
 *
 * Built as Mastra builds its own zod wrapper (`Object.create` over the schema), so that what Mastra reads of a zod
 * schema (its shape, for the model's JSON Schema and its input repairs) is the original's.
 */
export function rawInputSchema<S>(schema: S): S {
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
