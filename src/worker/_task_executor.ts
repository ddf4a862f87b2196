/**
 * Runs one claimed task: calls the step handler with its input and context, enforces the task's
 * timeout, and turns whatever happened into an outcome to report. Never throws.
 *
 * @module
 */

import type { Sql } from "../db/driver/postgres.ts";
import type { StepContext } from "../dsl/context.ts";
import { JsonSizeError, JsonValueError } from "../dsl/errors.ts";
import { toJsonText } from "../dsl/json_text.ts";
import type { StepHandler } from "../dsl/step_definition.ts";
import { formatTaskError, MAX_TASK_ERROR_LENGTH } from "./_errors.ts";
import { truncate } from "./describe_error.ts";
import type { ClaimedTask, WaitParameter } from "../db/worker_queries.ts";
import type { StepDefinition } from "../dsl/step_definition.ts";
import { computeWaitParameters } from "./_wait_parameters.ts";
import type { RunningAttempts } from "./_running_attempts.ts";
import { MAX_RETRY_DELAY_SECONDS, RetryAfterError } from "./retry_after_error.ts";

/** What became of one execution. */
export type TaskOutcome =
  | {
    readonly kind: "completed";
    readonly outputJson: string;
    /** The parameters of the waits this completion starts. */
    readonly waits: readonly WaitParameter[];
  }
  | {
    readonly kind: "failed";
    /** The error text stored on the task. */
    readonly error: string;
    /** The handler-chosen delay, or `null` for the normal backoff. */
    readonly retryDelaySeconds: number | null;
    /** Why the attempt failed, for logs. */
    readonly reason: FailureReason;
  };

/** Why an attempt failed. */
export type FailureReason =
  | "error"
  | "retry_after"
  | "invalid_retry_delay"
  | "timeout"
  | "shutdown"
  | "cancelled"
  | "invalid_output";

/** What every execution of a worker shares. */
export interface ExecutionEnvironment {
  readonly sql: Sql;
  readonly env: Readonly<Record<string, string | undefined>>;
  /** Aborted when the worker gives up on in-flight tasks at shutdown. */
  readonly shutdownSignal: AbortSignal;
  /** The largest output stored, in bytes of JSON text; a larger one fails the attempt. */
  readonly maxOutputBytes: number;
  /**
   * Where a running attempt is recorded, so that the heartbeat can abort its handler once the
   * attempt is no longer live (its run was cancelled).
   */
  readonly running: RunningAttempts;
}

/** The `signal.reason` of a task that timed out. */
function timeoutReason(seconds: number): DOMException {
  return new DOMException(`Task timed out after ${seconds}s`, "TimeoutError");
}

/** The `signal.reason` of a task abandoned at shutdown. */
export function shutdownReason(graceMs: number): DOMException {
  return new DOMException(
    `Worker stopped before the task finished (shutdown grace of ${graceMs} ms expired)`,
    "AbortError",
  );
}

/** Runs `handler` for `task`; resolves with the outcome once the handler settles or is aborted. */
export async function executeTask(
  task: ClaimedTask,
  handler: StepHandler,
  environment: ExecutionEnvironment,
  waits: readonly StepDefinition[] = [],
): Promise<TaskOutcome> {
  const controller = new AbortController();
  let aborted!: (reason: unknown) => void;
  const abortedPromise = new Promise<{ aborted: true; reason: unknown }>((resolve) => {
    aborted = (reason) => resolve({ aborted: true, reason });
  });
  const abort = (reason: unknown) => {
    if (controller.signal.aborted) return;
    controller.abort(reason);
    aborted(reason);
  };
  const timer = setTimeout(
    () => abort(timeoutReason(task.timeoutSeconds)),
    task.timeoutSeconds * 1000,
  );
  const onShutdown = () => abort(environment.shutdownSignal.reason);
  if (environment.shutdownSignal.aborted) onShutdown();
  else environment.shutdownSignal.addEventListener("abort", onShutdown, { once: true });
  // The heartbeat aborts an attempt that is no longer live: its report would be stale anyway.
  let cancelled = false;
  const forget = environment.running.add(task, (reason) => {
    if (controller.signal.aborted) return;
    cancelled = true;
    abort(reason);
  });

  const context: StepContext = {
    sql: environment.sql,
    env: environment.env,
    signal: controller.signal,
    flowSlug: task.flowSlug,
    flowInput: task.flowInput,
    runId: task.runId,
    stepSlug: task.stepSlug,
    taskIndex: task.taskIndex,
    attempt: task.attempt,
    maxAttempts: task.maxAttempts,
  };

  try {
    const settled = await Promise.race([
      Promise.resolve()
        .then(() => handler(task.input, context))
        .then(
          (output) => ({ aborted: false as const, ok: true as const, output }),
          (error: unknown) => ({ aborted: false as const, ok: false as const, error }),
        ),
      abortedPromise,
    ]);
    if (settled.aborted) return abortedOutcome(settled.reason, task, cancelled);
    if (!settled.ok) {
      // A handler that rethrows the abort reason after a timeout reports the timeout.
      if (controller.signal.aborted) {
        return abortedOutcome(controller.signal.reason, task, cancelled);
      }
      return errorOutcome(settled.error);
    }
    const outcome = serializeOutput(settled.output, task, environment.maxOutputBytes);
    if (outcome.kind !== "completed" || waits.length === 0) return outcome;
    try {
      return { ...outcome, waits: computeWaitParameters(task.stepSlug, outcome.outputJson, waits) };
    } catch (error) {
      return errorOutcome(error);
    }
  } finally {
    forget();
    clearTimeout(timer);
    environment.shutdownSignal.removeEventListener("abort", onShutdown);
  }
}

function abortedOutcome(reason: unknown, task: ClaimedTask, cancelled: boolean): TaskOutcome {
  const timedOut = reason instanceof DOMException && reason.name === "TimeoutError";
  const message = reason instanceof Error || reason instanceof DOMException
    ? `${reason.name}: ${reason.message}`
    : `AbortError: ${String(reason)}`;
  return {
    kind: "failed",
    error: timedOut
      ? `${message} (step "${task.stepSlug}", attempt ${task.attempt}); its signal was aborted`
      : message,
    retryDelaySeconds: null,
    reason: timedOut ? "timeout" : cancelled ? "cancelled" : "shutdown",
  };
}

function errorOutcome(error: unknown): TaskOutcome {
  if (!isRetryAfterError(error)) {
    return {
      kind: "failed",
      error: formatTaskError(error),
      retryDelaySeconds: null,
      reason: "error",
    };
  }
  const invalid = invalidRetryDelayReason(error.delaySeconds);
  if (invalid === null) {
    return {
      kind: "failed",
      error: formatTaskError(error),
      retryDelaySeconds: error.delaySeconds,
      reason: "retry_after",
    };
  }
  return {
    kind: "failed",
    error: truncate(
      `Invalid retry delay: RetryAfterError.delaySeconds ${invalid}; ` +
        `the normal backoff applies instead\n${formatTaskError(error)}`,
      MAX_TASK_ERROR_LENGTH,
    ),
    retryDelaySeconds: null,
    reason: "invalid_retry_delay",
  };
}

/** Recognizes a RetryAfterError, also one from another copy of this module. */
function isRetryAfterError(error: unknown): error is RetryAfterError {
  return error instanceof RetryAfterError ||
    (error instanceof Error && error.name === "RetryAfterError" && "delaySeconds" in error);
}

/** `null` when `delaySeconds` is a valid retry delay, else what is wrong with it. */
export function invalidRetryDelayReason(delaySeconds: unknown): string | null {
  if (typeof delaySeconds !== "number" || !Number.isFinite(delaySeconds)) {
    return `must be a finite number of seconds from 0 to ${MAX_RETRY_DELAY_SECONDS}, got ${
      typeof delaySeconds === "number" ? String(delaySeconds) : typeof delaySeconds
    }`;
  }
  if (delaySeconds < 0 || delaySeconds > MAX_RETRY_DELAY_SECONDS) {
    return `must be from 0 to ${MAX_RETRY_DELAY_SECONDS} seconds, got ${delaySeconds}`;
  }
  return null;
}

/** The output as JSON text, or a failed attempt naming what in it cannot be stored. */
function serializeOutput(output: unknown, task: ClaimedTask, maxBytes: number): TaskOutcome {
  try {
    return {
      kind: "completed",
      outputJson: toJsonText(output === undefined ? null : output, {
        action: `Cannot store the output of step ${JSON.stringify(task.stepSlug)}`,
        root: "output",
        maxBytes,
      }),
      waits: [],
    };
  } catch (error) {
    const refused = error instanceof JsonValueError || error instanceof JsonSizeError;
    return {
      kind: "failed",
      // The rule's own errors need no stack; a getter of the output that threw does.
      error: refused ? `${error.name}: ${error.message}` : formatTaskError(error),
      retryDelaySeconds: null,
      reason: "invalid_output",
    };
  }
}
