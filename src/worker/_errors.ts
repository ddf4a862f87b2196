/**
 * Error classification and formatting for the worker: which database errors are transient, and
 * how a handler error is turned into the text stored on the task.
 *
 * @module
 */

import { EmptyResultError } from "../db/only_row.ts";
import { errorCode, safeString, truncate } from "./describe_error.ts";

/** Connection-level error codes of postgres.js and the Node/Deno socket layer. */
const TRANSIENT_CONNECTION_CODES = new Set([
  "CONNECTION_CLOSED",
  "CONNECTION_DESTROYED",
  "CONNECTION_ENDED",
  "CONNECT_TIMEOUT",
  "ECONNREFUSED",
  "ECONNRESET",
  "ECONNABORTED",
  "EPIPE",
  "ETIMEDOUT",
  "EHOSTUNREACH",
  "ENETUNREACH",
  "ENOTFOUND",
  "EAI_AGAIN",
]);

/**
 * SQLSTATEs that mean "try again": connection exceptions (08xxx), admin/crash shutdown and
 * cannot-connect-now (57P01..57P03), too many connections (53300), serialization failure and
 * deadlock (40001, 40P01), and query cancellation by the server on shutdown.
 */
const TRANSIENT_SQLSTATES = new Set(["57P01", "57P02", "57P03", "53300", "40001", "40P01"]);

/**
 * Whether a database call failed for a reason that goes away by itself (the server restarts, a
 * connection was terminated, too many clients): the call is retried with backoff. Anything else
 * (a raised SQL error, a bug) is not.
 */
export function isTransientDatabaseError(error: unknown): boolean {
  const code = errorCode(error);
  if (code !== undefined) {
    if (TRANSIENT_CONNECTION_CODES.has(code) || TRANSIENT_SQLSTATES.has(code)) return true;
    if (/^08[0-9A-Z]{3}$/.test(code)) return true;
  }
  if (error instanceof EmptyResultError) return true;
  if (error instanceof Error) {
    // Socket errors of the Deno runtime do not always carry a code.
    if (
      error.name === "ConnectionRefused" || error.name === "ConnectionReset" ||
      error.name === "BrokenPipe" || error.name === "ConnectionAborted"
    ) return true;
    if (error.cause !== undefined && error.cause !== error) {
      return isTransientDatabaseError(error.cause);
    }
  }
  return false;
}

/** Maximum length of the error text stored on a task. */
export const MAX_TASK_ERROR_LENGTH = 4000;
const MAX_STACK_FRAMES = 12;
/** Frames from the worker's own private modules say nothing about the handler: they are dropped. */
const WORKER_INTERNALS = new URL("./_", import.meta.url).href;

/**
 * The error text stored on a failed task: `Name: message`, the chain of causes, and the stack
 * frames (the stack's own copy of the message is dropped, and so are frames of the worker
 * runtime), truncated. Nothing of the task's input or the queue message is added.
 */
export function formatTaskError(error: unknown): string {
  if (!(error instanceof Error)) {
    return truncate(`non-error value thrown: ${safeString(error)}`, MAX_TASK_ERROR_LENGTH);
  }
  const lines = [`${error.name}: ${error.message}`];
  const frames = stackFrames(error);
  if (frames.length > 0) lines.push(...frames);
  let cause: unknown = error.cause;
  for (let depth = 0; cause !== undefined && depth < 3; depth++) {
    if (cause instanceof Error) {
      lines.push(`Caused by ${cause.name}: ${cause.message}`);
      lines.push(...stackFrames(cause).slice(0, 4));
      cause = cause.cause;
    } else {
      lines.push(`Caused by: ${safeString(cause)}`);
      cause = undefined;
    }
  }
  return truncate(lines.join("\n"), MAX_TASK_ERROR_LENGTH);
}

function stackFrames(error: Error): string[] {
  if (typeof error.stack !== "string") return [];
  return error.stack
    .split("\n")
    .filter((line) => /^\s+at /.test(line))
    .filter((line) => !line.includes(WORKER_INTERNALS))
    .slice(0, MAX_STACK_FRAMES)
    .map((line) => `    ${line.trim()}`);
}
