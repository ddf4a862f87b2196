/**
 * `describeError()`: the one-line description of an error that the worker and the Edge adapter
 * log, and the helpers it shares with the text stored on a failed task. Not part of the public
 * API.
 *
 * @module
 */

import { errorCode } from "../db/transient_error.ts";

/** A one-line description of an error for logs: name, code and message, truncated. */
export function describeError(error: unknown, maxLength = 500): string {
  if (error instanceof Error) {
    const code = errorCode(error);
    const text = `${error.name}${code === undefined ? "" : ` [${code}]`}: ${error.message}`;
    return truncate(text, maxLength);
  }
  return truncate(`non-error value thrown: ${safeString(error)}`, maxLength);
}

/** Cuts text to at most `maxLength` characters, marking the cut. */
export function truncate(text: string, maxLength: number): string {
  if (text.length <= maxLength) return text;
  const marker = " …(truncated)";
  return text.slice(0, Math.max(0, maxLength - marker.length)) + marker;
}

/** A value as text for an error description: strings quoted, anything unprintable by type. */
export function safeString(value: unknown): string {
  try {
    if (typeof value === "string") return JSON.stringify(value);
    return String(value);
  } catch {
    return typeof value;
  }
}
