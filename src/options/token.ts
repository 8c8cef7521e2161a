/** RFC 9110's `token` (section 5.6.2): what an HTTP method and a header name are made of. */
const TOKEN = /^[!#$%&'*+\-.^_`|~0-9A-Za-z]+$/;

/** Whether `text` is a `token`, as a method or a header name must be. */
export function isToken(text: unknown): text is string {
  return typeof text === "string" && TOKEN.test(text);
}
