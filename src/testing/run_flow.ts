/**
 * Runs one flow to completion in a test database with in-process workers for every route.
 *
 * @module
 */

import { liveDescendantRuns, releaseRunWaits, skipRetryDelays } from "../db/testing_queries.ts";
import { extractDefinition, servedStepSlugs } from "../dsl/definition.ts";
import { routingOf, startRefOf } from "../dsl/routing.ts";
import type { DeployableFlow, FlowInput, FlowOutput, StepOutput, StepSlug } from "../dsl/types.ts";
import { startFlow } from "../client/start_flow.ts";
import { getRun, type RunState } from "../client/get_run.ts";
import { getRunTasks, type TaskState } from "../client/get_run_tasks.ts";
import { sendSignal, type SendSignalOptions } from "../client/send_signal.ts";
import { startWorker, type WorkerHandle, type WorkerOptions } from "../worker/mod.ts";
import type { TestDatabase } from "./test_database.ts";

/** Options of {@linkcode runFlow}. */
export interface RunFlowOptions {
  /**
   * How long the run may take, in wall-clock milliseconds.
   *
   * @default {30000}
   */
  timeoutMs?: number;
  /**
   * Make retry delays pass at once: every queued task of the run whose message is delayed
   * becomes visible right away. `false` leaves them to real time or to `db.clock.advance()`.
   *
   * @default {true}
   */
  skipDelays?: boolean;
  /**
   * Make the run's sleeps (`.sleep()` steps) due at once: each completes as soon as it starts
   * waiting, with its due time moved to then. `false` leaves them to real time or to
   * `db.clock.advance()`.
   *
   * @default {true}
   */
  skipSleeps?: boolean;
  /**
   * Make the run's signal waits that have a timeout (`.waitForSignal({ timeoutSeconds })`) time
   * out as soon as they start waiting, following their `onTimeout`, unless a signal (`signals`)
   * completes them first. For testing the timeout branch.
   *
   * @default {false}
   */
  timeOutWaits?: boolean;
  /**
   * Signals to send once the run has started (`sendSignal`, one after the other): each is kept
   * until a wait of the run starts on its key, or completes the one waiting on it. A signal sent
   * before `runFlow` started the run completes no wait of it (docs/waits.md#signals), unless the
   * wait step sets `acceptSignalsSentBeforeRun`.
   *
   * @default {[]}
   */
  signals?: readonly SendSignalOptions[];
}

/**
 * What {@linkcode runFlow} saw: the run, its tasks, and lookups for assertions, typed by the flow.
 *
 * @typeParam F The flow that ran (plain, step-queued or deployed).
 */
export interface FlowResult<F extends DeployableFlow = DeployableFlow> {
  /** The run id. */
  readonly runId: string;
  /** `completed` or `failed` (or `cancelled`, when the run was cancelled meanwhile). */
  readonly status: RunState["status"];
  /** The run output (`null` unless completed). */
  readonly output: FlowOutput<F> | null;
  /** The run's error message when it failed. */
  readonly errorMessage: string | null;
  /** The run with its steps. */
  readonly run: RunState<FlowInput<F>, FlowOutput<F>>;
  /** Every task of the run. */
  readonly tasks: readonly TaskState[];
  /**
   * The output of step `stepSlug` (an array for a map step), or `null` when it has none (it
   * failed, was skipped or never ran).
   */
  stepOutput<S extends StepSlug<F>>(stepSlug: S): StepOutput<F, S> | null;
  /** Attempts of step `stepSlug`'s task `taskIndex` (default 0). */
  attempts(stepSlug: StepSlug<F>, taskIndex?: number): number;
  /** The last error of step `stepSlug`'s task `taskIndex` (default 0), or `null`. */
  lastError(stepSlug: StepSlug<F>, taskIndex?: number): string | null;
}

/** Thrown by {@linkcode runFlow} when the run is not resolved in time. */
export class FlowRunTimeoutError extends Error {
  /** The run id. */
  runId: string;
  /** The limit, in milliseconds. */
  timeoutMs: number;
  /** The run's steps still waiting (durable waits) when the limit passed, with their key. */
  waiting: { stepSlug: string; waitKey: string | null; waitUntil: Date | null }[];

  /**
   * @param runId The run id.
   * @param timeoutMs The limit, in milliseconds.
   * @param waiting The run's steps still waiting then.
   */
  constructor(
    runId: string,
    timeoutMs: number,
    waiting: { stepSlug: string; waitKey: string | null; waitUntil: Date | null }[] = [],
  ) {
    const waits = waiting.map((step) =>
      step.waitKey === null && step.waitUntil === null
        ? `step "${step.stepSlug}" waits for its subflow children`
        : step.waitKey === null
        ? `step "${step.stepSlug}" sleeps until ${step.waitUntil?.toISOString()}`
        : `step "${step.stepSlug}" waits for a signal with key ${JSON.stringify(step.waitKey)}`
    );
    super(
      `Cannot finish run ${runId}: not resolved within ${timeoutMs} ms` +
        (waits.length === 0
          ? ""
          : `; ${waits.join(", ")} (send it with the option signals or with sendSignal ` +
            "during the run, or time it out with the option timeOutWaits)"),
    );
    this.name = "FlowRunTimeoutError";
    this.runId = runId;
    this.timeoutMs = timeoutMs;
    this.waiting = waiting;
  }
}

/**
 * The flows a run of `flow` may start as subflow children (docs/subflows.md), and theirs, each
 * once (by what it is started by), a child before its parent: the order they compile in.
 */
function subflowChildren(flow: DeployableFlow): DeployableFlow[] {
  const seen = new Set<string>();
  const order: DeployableFlow[] = [];
  const visit = (parent: DeployableFlow) => {
    for (const step of routingOf(parent).flow.steps) {
      if (step.wait?.kind !== "subflow") continue;
      const child = step.wait.child as DeployableFlow;
      const ref = startRefOf(child).ref;
      if (seen.has(ref)) continue;
      seen.add(ref);
      visit(child);
      order.push(child);
    }
  };
  visit(flow);
  return order;
}

/** Starts in-process workers for every route of `flow`. */
async function startRouteWorkers(db: TestDatabase, flow: DeployableFlow): Promise<WorkerHandle[]> {
  const routing = routingOf(flow);
  const stepSlugs: (string | undefined)[] = routing.queueMode === "flow"
    ? [undefined]
    : servedStepSlugs(extractDefinition(flow));
  const workers: WorkerHandle[] = [];
  try {
    for (const stepSlug of stepSlugs) {
      workers.push(
        // One worker per route: the options vary per route, so they are checked at run time.
        await startWorker(
          flow,
          {
            connectionString: db.url,
            poolSize: 2,
            pollIntervalMs: 20,
            logger: () => {},
            ...(stepSlug === undefined ? {} : { stepSlug }),
            ...(routing.alias === undefined ? {} : { activate: "on-startup" }),
          } as WorkerOptions,
        ),
      );
    }
  } catch (error) {
    for (const worker of workers) await worker.stop();
    throw error;
  }
  return workers;
}

/**
 * Runs `flow` once with `input`: starts in-process workers for every route (one for a plain flow,
 * one per step of a step-queued flow, the wrapped flow's of a deployed flow), and for every flow
 * its subflows start (children first, so that they are compiled before the parent), waits until
 * the run completes or fails, stops the workers and returns what happened. A failed run is
 * returned, not thrown. The delays and waits options apply to the run's subflow children too.
 *
 * @param db The test database.
 * @param flow A plain, step-queued or deployed flow.
 * @param input The run input.
 * @param options Timeout and the test clock.
 * @throws {FlowRunTimeoutError} When the run is not resolved within `timeoutMs`.
 */
export async function runFlow<F extends DeployableFlow>(
  db: TestDatabase,
  flow: F,
  input: FlowInput<F>,
  options: RunFlowOptions = {},
): Promise<FlowResult<F>> {
  const timeoutMs = options.timeoutMs ?? 30_000;
  const workers: WorkerHandle[] = [];
  try {
    for (const each of [...subflowChildren(flow), flow as DeployableFlow]) {
      workers.push(...await startRouteWorkers(db, each));
    }
    const runId = await startFlow(db.sql, flow, input);
    for (const signal of options.signals ?? []) await sendSignal(db.sql, signal);
    const deadline = Date.now() + timeoutMs;
    let run = await getRun<FlowInput<F>, FlowOutput<F>>(db.sql, runId);
    while (run === null || run.status === "started") {
      if (Date.now() > deadline) {
        const waiting = (run?.steps ?? []).filter((step) => step.status === "waiting")
          .map(({ stepSlug, waitKey, waitUntil }) => ({ stepSlug, waitKey, waitUntil }));
        throw new FlowRunTimeoutError(runId, timeoutMs, waiting);
      }
      for (const id of [runId, ...await liveDescendantRuns(db.sql, runId)]) {
        if (options.skipDelays !== false) await skipRetryDelays(db.sql, id);
        await releaseRunWaits(db.sql, id, {
          sleeps: options.skipSleeps !== false,
          timeouts: options.timeOutWaits === true,
        });
      }
      await new Promise((resolve) => setTimeout(resolve, 20));
      run = await getRun<FlowInput<F>, FlowOutput<F>>(db.sql, runId);
    }
    const tasks = await getRunTasks(db.sql, runId);
    const task = (stepSlug: string, taskIndex: number) => {
      const found = tasks.find((t) => t.stepSlug === stepSlug && t.taskIndex === taskIndex);
      if (found === undefined) {
        throw new RangeError(`Cannot find task ${taskIndex} of step "${stepSlug}" in run ${runId}`);
      }
      return found;
    };
    const finished = run;
    return {
      runId,
      status: finished.status,
      output: finished.output,
      errorMessage: finished.errorMessage,
      run: finished,
      tasks,
      stepOutput<S extends StepSlug<F>>(stepSlug: S) {
        const step = finished.steps.find((s) => s.stepSlug === stepSlug);
        if (step === undefined) {
          throw new RangeError(`Cannot find step "${stepSlug}" in run ${runId}`);
        }
        // The database holds what the step's handler returned, which its type describes.
        return step.output as StepOutput<F, S> | null;
      },
      attempts: (stepSlug, taskIndex = 0) => task(stepSlug, taskIndex).attempts,
      lastError: (stepSlug, taskIndex = 0) => task(stepSlug, taskIndex).lastError,
    };
  } finally {
    for (const worker of workers) await worker.stop();
  }
}
