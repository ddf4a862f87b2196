/**
 * Error formatting for the worker: how a handler error is turned into the text stored on the task
 * (which database errors are transient: src/db/transient_error.ts).
 *
 * @module
 */

import { safeString, truncate } from "./describe_error.ts";

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
