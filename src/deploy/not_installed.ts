/**
 * Recognizes the database error of a call into sluice where its migrations were never applied.
 *
 * @module
 */

import { SluiceNotInstalledError } from "./errors.ts";

/**
 * `error` as a {@linkcode SluiceNotInstalledError} when the database said the sluice schema does
 * not exist (SQLSTATE 3F000 naming it, whatever the server's message language), else `error` itself.
 *
 * @param error What a query threw.
 * @param action What was refused, for the message.
 * @returns The error to throw.
 */
export function notInstalledError(error: unknown, action: string): unknown {
  const { code, message } = error as { code?: unknown; message?: unknown };
  return code === "3F000" && typeof message === "string" && message.includes('"sluice"')
    ? new SluiceNotInstalledError(action, { cause: error })
    : error;
}
