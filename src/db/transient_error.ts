/**
 * Which database errors are transient (go away by themselves, so the call is retried): used by
 * the worker's loops, the run listener and `watchRun()`.
 *
 * @module
 */

import { EmptyResultError } from "./only_row.ts";

/** The SQLSTATE or connection code of an error, when it has one. */
export function errorCode(error: unknown): string | undefined {
  if (typeof error !== "object" || error === null) return undefined;
  const code = (error as { code?: unknown }).code;
  return typeof code === "string" ? code : undefined;
}

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

/** Deno's socket errors that carry no code and mean the connection was lost. */
const TRANSIENT_SOCKET_ERROR_NAMES = new Set([
  "ConnectionRefused",
  "ConnectionReset",
  "BrokenPipe",
  "ConnectionAborted",
  "UnexpectedEof",
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
    // libuv's catch-all for a socket call on a connection that is gone (`write UNKNOWN`).
    if (code === "UNKNOWN" && isSocketCall((error as { syscall?: unknown }).syscall)) return true;
  }
  if (error instanceof EmptyResultError) return true;
  if (error instanceof Error) {
    // Socket errors of the Deno runtime do not always carry a code. `UnexpectedEof`: a TLS
    // connection that ended without the TLS shutdown (a crash, a proxy or the network cut it).
    if (TRANSIENT_SOCKET_ERROR_NAMES.has(error.name)) return true;
    if (error.cause !== undefined && error.cause !== error) {
      return isTransientDatabaseError(error.cause);
    }
  }
  return false;
}

function isSocketCall(syscall: unknown): boolean {
  return syscall === "write" || syscall === "read" || syscall === "connect";
}
