/**
 * Every SQL statement the worker runs, one function each, typed on both sides. The SQL functions
 * and their JSON shapes are described in docs/internals/contracts.md §3. The per-task statements
 * (claim, completion, failure) are sent as simple queries with inlined literals: one round trip
 * each (see `inline_sql.ts`).
 *
 * @module
 */

import type { Sql } from "./driver/postgres.ts";
import {
  inline,
  integer,
  jsonb,
  type JsonInput,
  SerializedJson,
  simpleQuery,
  storableText,
  uuid,
} from "./inline_sql.ts";
import { onlyRow } from "./only_row.ts";

/** One `(flow_slug, step_slug)` pair a worker can run. */
export interface SupportedRoute {
  flow_slug: string;
  step_slug: string;
}

/** A task the worker claimed: identity, attempt, timeout and the handler's arguments. */
export interface ClaimedTask {
  /** The PGMQ message id (decimal string) on the worker's queue. */
  readonly messageId: string;
  readonly flowSlug: string;
  readonly runId: string;
  readonly stepSlug: string;
  readonly taskIndex: number;
  /** One-based attempt number (includes this one); with `workerId`, the attempt's fencing token. */
  readonly attempt: number;
  /** The claiming worker; every report of this attempt carries it with `attempt`. */
  readonly workerId: string;
  /** The effective step timeout in seconds. */
  readonly timeoutSeconds: number;
  /**
   * The number of the last attempt of the current round: the effective max attempts (step, else
   * flow), plus the attempts used before the run was last retried. The last attempt is
   * `attempt === maxAttempts`.
   */
  readonly maxAttempts: number;
  readonly input: unknown;
  readonly flowInput: unknown;
  /** The W3C trace context the run was started in, or `null`. */
  readonly traceparent: string | null;
  /**
   * The error that ended this task's previous attempt (a failure, or `stalled: ...` when stall
   * recovery took it back), or `null` on a first attempt.
   */
  readonly previousError: string | null;
  /** When the task was queued, and when this attempt claimed it (the database's clock). */
  readonly queuedAt: string;
  readonly claimedAt: string;
}

/** A message `start_tasks` classified as work this worker must not touch. */
export interface FatalMessage {
  readonly messageId: string;
  /** `missing`, `wrong_queue` or `unsupported`. */
  readonly class: string;
}

/** What one read-and-claim round trip returned. */
export interface ClaimResult {
  /** `fenced`: the worker's flow was compiled again since it registered; nothing was claimed. */
  readonly outcome: "claimed" | "fatal" | "fenced";
  /** For `fenced`: the flow the worker was registered for. */
  readonly flowSlug?: string;
  /** Every message id the read returned (claimed or not). */
  readonly messageIds: readonly string[];
  readonly tasks: readonly ClaimedTask[];
  readonly duplicates: readonly string[];
  readonly archived: readonly string[];
  readonly fatal: readonly FatalMessage[];
}

/** How a read waits for messages. */
export type ReadMode =
  | { readonly kind: "read" }
  | {
    readonly kind: "long_poll";
    readonly maxPollSeconds: number;
    readonly pollIntervalMs: number;
  };

/** Arguments of {@linkcode readAndClaim}. */
export interface ReadAndClaimArgs {
  readonly queue: string;
  readonly visibilityTimeout: number;
  readonly quantity: number;
  readonly workerId: string;
  readonly supported: readonly SupportedRoute[];
  readonly mode: ReadMode;
  /** Cancels the statement (used to end a long poll at shutdown). */
  readonly signal?: AbortSignal;
}

interface RawClaim {
  outcome: "claimed" | "fatal" | "fenced";
  flow_slug?: string;
  tasks: {
    message_id: string;
    flow_slug: string;
    run_id: string;
    step_slug: string;
    task_index: number;
    attempt: number;
    worker_id: string;
    timeout_seconds: number;
    max_attempts: number;
    input: unknown;
    flow_input: unknown;
    traceparent: string | null;
    previous_error?: string | null;
    queued_at: string;
    claimed_at: string;
  }[];
  duplicates: string[];
  archived: string[];
  fatal: { message_id: string; class: string }[];
}

/**
 * Reads up to `quantity` visible messages and claims them with `sluice.start_tasks`, in one
 * statement and so in one transaction: when the claim fails (a lost connection, an error), the
 * read's visibility change rolls back with it and the messages stay visible, instead of hiding
 * for the read's visibility timeout. The materialized CTE makes the read happen exactly once,
 * before the claim sees its ids.
 */
export async function readAndClaim(sql: Sql, args: ReadAndClaimArgs): Promise<ClaimResult> {
  const { queue, visibilityTimeout: vt, quantity, mode } = args;
  const read = mode.kind === "read"
    ? inline`sluice.read_messages(${queue}, ${integer(vt)}, ${integer(quantity)})`
    : inline`sluice.read_messages_with_poll(${queue}, ${integer(vt)}, ${integer(quantity)}, ${
      integer(mode.maxPollSeconds)
    }, ${integer(mode.pollIntervalMs)})`;
  const supported = args.supported.map((route) => ({ ...route }));
  const query = simpleQuery<{ message_ids: string[]; claim: RawClaim }[]>(
    sql,
    inline`
    with batch as materialized (
      select coalesce(pg_catalog.array_agg(m.msg_id order by m.msg_id), '{}'::bigint[]) as ids
      from ${read} m
    )
    select b.ids::text[] as message_ids,
      sluice.start_tasks(${queue}, b.ids, ${uuid(args.workerId)}, ${jsonb(supported)}) as claim
    from batch b`,
  );
  const cancel = () => query.cancel();
  args.signal?.addEventListener("abort", cancel, { once: true });
  try {
    const row = onlyRow("start_tasks", await query);
    const claim = row.claim;
    return {
      outcome: claim.outcome,
      flowSlug: claim.flow_slug,
      messageIds: row.message_ids,
      tasks: claim.tasks.map((task) => ({
        messageId: task.message_id,
        flowSlug: task.flow_slug,
        runId: task.run_id,
        stepSlug: task.step_slug,
        taskIndex: task.task_index,
        attempt: task.attempt,
        workerId: task.worker_id,
        timeoutSeconds: task.timeout_seconds,
        maxAttempts: task.max_attempts,
        input: task.input,
        flowInput: task.flow_input,
        traceparent: task.traceparent ?? null,
        previousError: task.previous_error ?? null,
        queuedAt: task.queued_at,
        claimedAt: task.claimed_at,
      })),
      duplicates: claim.duplicates,
      archived: claim.archived,
      fatal: claim.fatal.map((entry) => ({ messageId: entry.message_id, class: entry.class })),
    };
  } finally {
    args.signal?.removeEventListener("abort", cancel);
  }
}

/**
 * Waits in the database, for at most `maxSeconds` and checking every `intervalMs`, until one of
 * `queues` has a visible message (`sluice.wait_for_messages`); resolves the queues that have one
 * (none when the time ran out). Closing the connection ends the wait within `intervalMs`.
 */
export async function waitForMessages(
  sql: Sql,
  queues: readonly string[],
  maxSeconds: number,
  intervalMs: number,
): Promise<string[]> {
  // Two statements of one implicit transaction: the server arms its check for a closed client
  // as a statement starts, so the setting must precede the wait's statement; `local` keeps it out
  // of a pooled server connection. The result comes as JSON: a session client fetches no array
  // types, so a text[] would come back unparsed.
  const results = await simpleQuery<{ ready: string[] }[][]>(
    sql,
    inline`set local client_connection_check_interval = ${integer(intervalMs)};
    select to_jsonb(sluice.wait_for_messages(
      array(select jsonb_array_elements_text(${jsonb([...queues])})),
      ${integer(maxSeconds)}, ${integer(intervalMs)})) as ready`,
  );
  return onlyRow("wait_for_messages", results.at(-1) ?? []).ready;
}

/**
 * Which of `queues` have a visible message now (`sluice.wait_for_messages` with no wait), in one
 * statement: the LISTEN session's periodic look for all its waiting workers.
 */
export async function visibleQueues(sql: Sql, queues: readonly string[]): Promise<string[]> {
  // As JSON: a pool that stopped refetching types would return a text[] unparsed.
  const rows = await simpleQuery<{ ready: string[] }[]>(
    sql,
    inline`select to_jsonb(sluice.wait_for_messages(
      array(select jsonb_array_elements_text(${jsonb([...queues])})), 0, 1)) as ready`,
  );
  return onlyRow("wait_for_messages", rows).ready;
}

/** The worker function row, as far as the worker cares. */
export interface WorkerFunctionRow {
  readonly functionName: string;
  readonly enabled: boolean;
  readonly restartPausedAt: Date | null;
  readonly pauseReason: string | null;
}

/** `sluice.track_worker_function`: creates or touches the worker function row. */
export async function trackWorkerFunction(
  sql: Sql,
  functionName: string,
): Promise<WorkerFunctionRow> {
  const row = onlyRow(
    "track_worker_function",
    await sql<
      {
        function_name: string;
        enabled: boolean;
        restart_paused_at: Date | null;
        pause_reason: string | null;
      }[]
    >`select function_name, enabled, restart_paused_at, pause_reason
      from sluice.track_worker_function(${functionName})`,
  );
  return {
    functionName: row.function_name,
    enabled: row.enabled,
    restartPausedAt: row.restart_paused_at,
    pauseReason: row.pause_reason,
  };
}

/** `sluice.register_worker`: inserts the worker row. */
export async function registerWorker(
  sql: Sql,
  worker: {
    workerId: string;
    functionName: string;
    queue: string;
    flowSlug: string;
    stepSlug: string | null;
    /** The compile generation the worker compiled against. */
    flowGeneration: number;
  },
): Promise<void> {
  await sql`select sluice.register_worker(
    ${worker.workerId}::uuid, ${worker.functionName}, ${worker.queue}, ${worker.flowSlug},
    ${worker.stepSlug}::text, ${worker.flowGeneration}::bigint
  )`;
}

/** An attempt a worker's handler is running: its task and attempt number. */
export interface RunningAttempt {
  readonly runId: string;
  readonly stepSlug: string;
  readonly taskIndex: number;
  readonly attempt: number;
}

/** A running attempt that is no longer live, with why (`null`: the row is gone). */
export interface AbortedAttempt extends RunningAttempt {
  readonly taskStatus: string | null;
  readonly runStatus: string | null;
  readonly cancelReason: string | null;
}

/** What a heartbeat answered. */
export interface HeartbeatAnswer {
  /** The worker was deprecated: it should drain and stop. */
  readonly deprecated: boolean;
  /** Which of the running attempts it sent are no longer live (their handlers should stop). */
  readonly aborted: readonly AbortedAttempt[];
}

/**
 * `sluice.heartbeat_worker`: refreshes the heartbeat; tells whether the worker is deprecated and
 * which of its running attempts are no longer live (a cancelled run, a requeued task).
 */
export async function heartbeatWorker(
  sql: Sql,
  workerId: string,
  running: readonly RunningAttempt[],
): Promise<HeartbeatAnswer> {
  const tasks = JSON.stringify(running.map((attempt) => ({
    run_id: attempt.runId,
    step_slug: attempt.stepSlug,
    task_index: attempt.taskIndex,
    attempt: attempt.attempt,
  })));
  const row = onlyRow(
    "heartbeat_worker",
    await sql<{
      result: {
        deprecated: boolean;
        aborted: {
          run_id: string;
          step_slug: string;
          task_index: number;
          attempt: number;
          task_status: string | null;
          run_status: string | null;
          cancel_reason: string | null;
        }[];
      };
    }[]>`
      select sluice.heartbeat_worker(${workerId}::uuid, ${tasks}::text::jsonb) as result`,
  );
  return {
    deprecated: row.result.deprecated === true,
    aborted: (row.result.aborted ?? []).map((entry) => ({
      runId: entry.run_id,
      stepSlug: entry.step_slug,
      taskIndex: entry.task_index,
      attempt: entry.attempt,
      taskStatus: entry.task_status,
      runStatus: entry.run_status,
      cancelReason: entry.cancel_reason,
    })),
  };
}

/** `sluice.stop_worker`: marks the worker stopped. */
export async function stopWorker(sql: Sql, workerId: string): Promise<void> {
  await sql`select sluice.stop_worker(${workerId}::uuid)`;
}

/** `sluice.requeue_stalled_tasks`: how many stalled tasks were requeued or failed. */
export async function requeueStalledTasks(sql: Sql): Promise<number> {
  const row = onlyRow(
    "requeue_stalled_tasks",
    await sql<{ handled: number }[]>`select sluice.requeue_stalled_tasks() as handled`,
  );
  return row.handled;
}

/**
 * `sluice.release_held_tasks()`: sends the held tasks of concurrency-limited steps that fit in
 * their keys' free slots; returns how many it sent.
 */
export async function releaseHeldTasks(sql: Sql): Promise<number> {
  const row = onlyRow(
    "release_held_tasks",
    await sql<{ sent: number }[]>`select sluice.release_held_tasks() as sent`,
  );
  return row.sent;
}

/**
 * `sluice.release_due_waits`: releases up to `batchSize` of the sleeps and signal timeouts that are
 * due (docs/waits.md); returns how many it released.
 */
export async function releaseDueWaits(sql: Sql, batchSize: number): Promise<number> {
  const row = onlyRow(
    "release_due_waits",
    await sql<{ released: number }[]>`
      select sluice.release_due_waits(${batchSize}::integer) as released`,
  );
  return row.released;
}

/**
 * `sluice.start_due_debounced`: creates the runs of up to `batchSize` debounced starts whose window
 * closed (docs/flow_control.md#debounced-starts); returns how many it created.
 */
export async function startDueDebounced(sql: Sql, batchSize: number): Promise<number> {
  const row = onlyRow(
    "start_due_debounced",
    await sql<{ started: number }[]>`
      select sluice.start_due_debounced(${batchSize}::integer) as started`,
  );
  return row.started;
}

/** The fencing token of one attempt, as its claim handed it out. */
export interface AttemptToken {
  readonly runId: string;
  readonly stepSlug: string;
  readonly taskIndex: number;
  readonly attempt: number;
  readonly workerId: string;
}

/** One successful result; `outputJson` is the handler output already serialized. */
export interface TaskResult extends AttemptToken {
  readonly outputJson: string;
  /**
   * The key, due time or child input of each wait step that depends on this step
   * (docs/waits.md, docs/subflows.md).
   */
  readonly waits?: readonly WaitParameter[];
}

/** What a completion tells `complete_tasks` about one wait step it starts. */
export interface WaitParameter {
  readonly step_slug: string;
  /** A signal wait's key. */
  readonly key?: string;
  /** A sleep's due instant (ISO 8601). */
  readonly until?: string;
  /** A sleep's duration in seconds, from when the wait starts. */
  readonly seconds?: number;
  /**
   * A subflow's child input (a map subflow: the array of its children's inputs), as JSON text;
   * spliced into the batch as `input`.
   */
  readonly inputJson?: string;
}

/** One wait parameter as `complete_tasks` reads it: a subflow's input spliced in as JSON. */
function waitEntry(wait: WaitParameter): JsonInput {
  const { inputJson, ...rest } = wait;
  return inputJson === undefined ? { ...rest } : { ...rest, input: new SerializedJson(inputJson) };
}

/** What `sluice.complete_tasks` did with a batch. */
export interface CompleteOutcome {
  /** How many results were applied. */
  readonly completed: number;
  /** The results whose attempt was no longer live: nothing changed for them. */
  readonly stale: readonly Omit<AttemptToken, "workerId">[];
  /** The runs these results completed, each with its duration from start to completion. */
  readonly runsCompleted: readonly CompletedRun[];
}

/** A run that a batch of results completed. */
export interface CompletedRun {
  readonly runId: string;
  readonly flowSlug: string;
  /** From the run's start (`runs.started_at`) to its completion, in seconds. */
  readonly seconds: number;
}

/**
 * `sluice.complete_tasks`: reports a batch of results, each fenced by its attempt's token. The
 * outputs are spliced in as they were serialized.
 */
export async function completeTasks(
  sql: Sql,
  results: readonly TaskResult[],
): Promise<CompleteOutcome> {
  const batch = jsonb(results.map((result) => ({
    run_id: result.runId,
    step_slug: result.stepSlug,
    task_index: result.taskIndex,
    attempt: result.attempt,
    worker_id: result.workerId,
    output: new SerializedJson(result.outputJson),
    ...(result.waits === undefined || result.waits.length === 0
      ? {}
      : { waits: result.waits.map(waitEntry) }),
  })));
  const row = onlyRow(
    "complete_tasks",
    await simpleQuery<
      {
        outcome: {
          completed: number;
          stale: { run_id: string; step_slug: string; task_index: number; attempt: number }[];
          runs_completed?: { run_id: string; flow_slug: string; seconds: number }[];
        };
      }[]
    >(sql, inline`select sluice.complete_tasks(${batch}) as outcome`),
  );
  return {
    completed: row.outcome.completed,
    stale: row.outcome.stale.map((entry) => ({
      runId: entry.run_id,
      stepSlug: entry.step_slug,
      taskIndex: entry.task_index,
      attempt: entry.attempt,
    })),
    runsCompleted: (row.outcome.runs_completed ?? []).map((run) => ({
      runId: run.run_id,
      flowSlug: run.flow_slug,
      seconds: Number(run.seconds),
    })),
  };
}

/** What `sluice.fail_task` did: `stale` when the attempt was no longer live (nothing changed). */
export type FailOutcome = "retried" | "failed" | "stale";

/**
 * `sluice.fail_task`: reports a failed attempt, fenced by its token. NULs and lone surrogates in
 * the error message are replaced (U+FFFD): the report never throws on the message's content.
 */
export async function failTask(
  sql: Sql,
  failure: AttemptToken & { error: string; retryDelaySeconds: number | null },
): Promise<FailOutcome> {
  const row = onlyRow(
    "fail_task",
    await simpleQuery<{ outcome: FailOutcome }[]>(
      sql,
      inline`
    select sluice.fail_task(
      ${uuid(failure.runId)}, ${failure.stepSlug}, ${integer(failure.taskIndex)},
      ${integer(failure.attempt)}, ${uuid(failure.workerId)}, ${storableText(failure.error)},
      ${failure.retryDelaySeconds}::double precision
    ) as outcome`,
    ),
  );
  return row.outcome;
}
