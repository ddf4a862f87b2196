/**
 * `waitForRun()`: resolves with a run's output once it completes.
 *
 * @module
 */

import { UnknownRunError } from "../events/unknown_run_error.ts";
import type { Sql } from "../db/driver/postgres.ts";
import { readPendingStart, readRunOutcome } from "../db/client_queries.ts";
import type { Json } from "../dsl/json.ts";
import type { DeployableFlow, FlowOutput } from "../dsl/types.ts";
import { positive } from "./_positive.ts";
import { assertUuid } from "../dsl/uuid.ts";
import { watchRun } from "./watch_run.ts";
import { RunCancelledError, RunFailedError, RunTimeoutError } from "./errors.ts";

/**
 * Options of {@linkcode waitForRun}.
 *
 * @typeParam F The flow whose output type the result takes (`never`: untyped JSON).
 *
 * @example Usage
 * ```ts
 * import type { WaitForRunOptions } from "@sluice/sluice";
 *
 * const options: WaitForRunOptions = { timeoutMs: 30_000 };
 * ```
 */
export interface WaitForRunOptions<F extends DeployableFlow = never> {
  /** How long to wait before rejecting with `RunTimeoutError`, in milliseconds. */
  readonly timeoutMs: number;
  /**
   * Wait for the run's events over LISTEN ({@linkcode watchRun}); with `false`, or where LISTEN
   * is unavailable, the run is polled.
   *
   * @default {true}
   */
  readonly listen?: boolean;
  /**
   * When polling, the first interval between checks; it grows by half after each check up to
   * `maxPollIntervalMs`.
   *
   * @default {50}
   */
  readonly pollIntervalMs?: number;
  /**
   * When polling, the longest interval between checks.
   *
   * @default {250}
   */
  readonly maxPollIntervalMs?: number;
  /** The run's flow: types the result as its output (only its type is used). */
  readonly flow?: F;
  /** Aborts the wait (rejects with the signal's reason). */
  readonly signal?: AbortSignal;
}

/**
 * The output type `waitForRun()` resolves with: the flow's output when a flow type is known,
 * otherwise any JSON value.
 *
 * @typeParam F A flow type, or `never`.
 *
 * @example Usage
 * ```ts
 * import type { Json, WaitForRunOutput } from "@sluice/sluice";
 *
 * const output: WaitForRunOutput<never> = { any: ["json"] } satisfies Json;
 * ```
 */
export type WaitForRunOutput<F extends DeployableFlow> = [F] extends [never] ? Json
  : FlowOutput<F>;

/**
 * Waits until a run finishes: by its live events over LISTEN ({@linkcode watchRun}), or, with
 * `listen: false` or where LISTEN is unavailable, by polling it (every 50 ms at first, backing
 * off to 250 ms).
 * Resolves with the run output (the outputs of its completed leaf steps, keyed by slug); typed as
 * the flow's output when the flow is passed as `flow` or given as the type argument.
 *
 * @typeParam F The run's flow type.
 * @param sql The database client.
 * @param runId The run id.
 * @param options The timeout, poll intervals, the flow (for the output type) and a signal.
 * @returns The run output.
 * @throws {RunFailedError} When the run failed (with the step and the error message).
 * @throws {RunCancelledError} When the run was cancelled (with the cancel's reason).
 * @throws {RunTimeoutError} When the run did not finish within `timeoutMs`.
 * @throws {RangeError} When no run has that id (nor will: the id of a debounced start's pending
 * run is waited for until the run is created, docs/flow_control.md#debounced-starts).
 * @throws {Error} When the debounced start whose run this is could not create it (its flow was
 * deleted), with the database's reason.
 * @throws {TypeError} When `runId` is not a UUID.
 *
 * @example Usage
 * ```ts ignore
 * import { connect, Flow, startFlow, waitForRun } from "@sluice/sluice";
 *
 * const sql = connect(Deno.env.get("DATABASE_URL")!);
 * const flow = new Flow<{ n: number }>({ slug: "math" })
 *   .step({ slug: "double" }, (input) => input.n * 2);
 * const runId = await startFlow(sql, flow, { n: 21 });
 * const output = await waitForRun(sql, runId, { timeoutMs: 10_000, flow });
 * console.log(output.double); // 42
 * ```
 */
export async function waitForRun<F extends DeployableFlow = never>(
  sql: Sql,
  runId: string,
  options: WaitForRunOptions<F>,
): Promise<WaitForRunOutput<F>> {
  assertUuid(runId, "Cannot wait for run");
  const action = `Cannot wait for run ${runId}`;
  const { timeoutMs } = options;
  if (typeof timeoutMs !== "number" || !(timeoutMs >= 0)) {
    throw new RangeError(`${action}: timeoutMs must be a number >= 0, got ${String(timeoutMs)}`);
  }
  let interval = positive(options.pollIntervalMs ?? 50, "pollIntervalMs", action);
  const maxInterval = Math.max(
    interval,
    positive(options.maxPollIntervalMs ?? 250, "maxPollIntervalMs", action),
  );
  const deadline = Date.now() + timeoutMs;
  const wait = (timeout: number): Promise<WaitForRunOutput<F>> =>
    options.listen === false
      ? pollRun(sql, runId, deadline, timeoutMs, interval, maxInterval, options.signal)
      : waitForEvents(sql, runId, timeout, interval, maxInterval, options.signal);
  try {
    return await wait(timeoutMs);
  } catch (error) {
    if (!(error instanceof NoSuchRun)) throw error;
  }
  // No run has the id (yet): the pending run of a debounced start is created when its window
  // closes, with this id.
  for (;;) {
    options.signal?.throwIfAborted();
    const pending = await readPendingStart(sql, runId);
    if (pending === null) break;
    if (pending.error_message !== null) {
      throw new Error(
        `Cannot wait for run ${runId}: its debounced start could not create it: ${pending.error_message}`,
      );
    }
    const remaining = deadline - Date.now();
    if (remaining <= 0) throw new RunTimeoutError(runId, timeoutMs, "pending");
    await delay(Math.min(interval, remaining), options.signal);
    interval = Math.min(maxInterval, interval * 1.5);
  }
  try {
    return await wait(Math.max(0, deadline - Date.now()));
  } catch (error) {
    if (error instanceof NoSuchRun) {
      throw new RangeError(`Cannot wait for run ${runId}: no such run`);
    }
    throw error;
  }
}

/** No run has the id (internal: `waitForRun` then looks for a pending debounced start). */
class NoSuchRun extends Error {
  override name = "NoSuchRun";
}

/** Polls the run until it finishes or `deadline` passes. */
async function pollRun<F extends DeployableFlow>(
  sql: Sql,
  runId: string,
  deadline: number,
  timeoutMs: number,
  pollIntervalMs: number,
  maxInterval: number,
  signal: AbortSignal | undefined,
): Promise<WaitForRunOutput<F>> {
  let interval = pollIntervalMs;
  for (;;) {
    signal?.throwIfAborted();
    const run = await readRunOutcome(sql, runId);
    if (run === null) throw new NoSuchRun(runId);
    if (run.status === "completed") return run.output as WaitForRunOutput<F>;
    if (run.status === "failed") {
      throw new RunFailedError({
        runId,
        flowSlug: run.flow_slug,
        stepSlug: run.failed_step,
        errorMessage: run.error_message ?? "(no error message)",
      });
    }
    if (run.status === "cancelled") {
      throw new RunCancelledError({ runId, flowSlug: run.flow_slug, reason: run.cancel_reason });
    }
    const remaining = deadline - Date.now();
    if (remaining <= 0) throw new RunTimeoutError(runId, timeoutMs, run.status);
    await delay(Math.min(interval, remaining), signal);
    interval = Math.min(maxInterval, interval * 1.5);
  }
}

/** Waits for the run's terminal event (watchRun polls by itself where LISTEN fails). */
async function waitForEvents<F extends DeployableFlow>(
  sql: Sql,
  runId: string,
  timeoutMs: number,
  pollIntervalMs: number,
  maxPollIntervalMs: number,
  signal: AbortSignal | undefined,
): Promise<WaitForRunOutput<F>> {
  const timeout = new AbortController();
  const timer = setTimeout(() => timeout.abort(), timeoutMs);
  const signals = signal === undefined ? [timeout.signal] : [signal, timeout.signal];
  try {
    for await (
      const event of watchRun(sql, runId, {
        signal: AbortSignal.any(signals),
        pollIntervalMs,
        maxPollIntervalMs,
      })
    ) {
      if (event.type === "run:completed") return event.output as WaitForRunOutput<F>;
      if (event.type === "run:failed") {
        throw new RunFailedError({
          runId,
          flowSlug: event.flowSlug,
          stepSlug: event.stepSlug,
          errorMessage: event.errorMessage ?? "(no error message)",
        });
      }
      if (event.type === "run:cancelled") {
        throw new RunCancelledError({ runId, flowSlug: event.flowSlug, reason: event.reason });
      }
    }
  } catch (error) {
    if (error instanceof UnknownRunError) throw new NoSuchRun(runId);
    if (timeout.signal.aborted && !signal?.aborted) {
      throw new RunTimeoutError(runId, timeoutMs, "started");
    }
    throw error;
  } finally {
    clearTimeout(timer);
  }
  throw new Error(`Cannot wait for run ${runId}: its events ended without a terminal event`);
}

function delay(ms: number, signal?: AbortSignal): Promise<void> {
  return new Promise((resolve, reject) => {
    const onAbort = () => {
      clearTimeout(timer);
      reject(signal?.reason);
    };
    const timer = setTimeout(() => {
      signal?.removeEventListener("abort", onAbort);
      resolve();
    }, ms);
    signal?.addEventListener("abort", onAbort, { once: true });
  });
}
