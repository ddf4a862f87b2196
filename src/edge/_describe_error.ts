/**
 * Error text for logs and status responses: name, code and message, without the stack.
 *
 * @module
 */

/** `"Name [code]: message"` of an error (or its string form), at most `maxLength` characters. */
export function describeError(error: unknown, maxLength = 500): string {
  let text: string;
  if (error instanceof Error) {
    const code = (error as { code?: unknown }).code;
    text = `${error.name}${typeof code === "string" ? ` [${code}]` : ""}: ${error.message}`;
  } else {
    text = String(error);
  }
  return text.length <= maxLength ? text : `${text.slice(0, maxLength - 1)}…`;
}
