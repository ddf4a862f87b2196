/**
 * Whether the command line shows stack traces.
 *
 * @module
 */

/** Whether the user asked for stack traces (`SLUICE_DEBUG=1`). */
export function debugRequested(): boolean {
  try {
    return ["1", "true"].includes(Deno.env.get("SLUICE_DEBUG") ?? "");
  } catch {
    return false; // no --allow-env
  }
}
