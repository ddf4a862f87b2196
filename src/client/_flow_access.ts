/**
 * The typed error of a per-flow refusal (SQLSTATE `SLA01`), for the client functions that map it.
 *
 * @module
 */

import { FlowAccessError } from "./errors.ts";

/** The typed error for SQLSTATE `SLA01` (a flow outside the role's grant), else `undefined`. */
export function flowAccessErrorOf(error: unknown): FlowAccessError | undefined {
  const { code, detail, message } = error as {
    code?: unknown;
    detail?: unknown;
    message?: unknown;
  };
  if (code !== "SLA01" || typeof detail !== "string" || typeof message !== "string") {
    return undefined;
  }
  const fields = JSON.parse(detail) as { role: string; flow: string; action: string };
  return new FlowAccessError(message, fields, { cause: error });
}
