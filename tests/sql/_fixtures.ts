// Fixtures shared by the SQL core tests: definitions written as JSON (contracts.md §1), and thin
// helpers over the SQL functions a worker calls.
import type postgres from "postgres";

/** The postgres.js client type the harness hands out. */
export type Sql = postgres.Sql;

/** One step of a definition; omitted fields take the DSL's defaults. */
export interface StepSpec {
  slug: string;
  type?: "single" | "map";
  deps?: string[];
  mapSource?: string | null;
  if?: Record<string, unknown> | null;
  ifNot?: Record<string, unknown> | null;
  whenUnmet?: "fail" | "skip" | "skip-cascade";
  whenExhausted?: "fail" | "skip" | "skip-cascade";
  maxAttempts?: number | null;
  baseDelay?: number | null;
  timeout?: number | null;
  startDelay?: number | null;
}

/** Flow-level settings of a definition. */
export interface FlowSpec {
  slug: string;
  queueMode?: "flow" | "step";
  maxAttempts?: number | null;
  baseDelay?: number | null;
  timeout?: number | null;
  events?: boolean | null;
  progressInterval?: number | null;
  steps: StepSpec[];
}

/** Mirror of the generated-name rule (docs/architecture.md#queue-modes-and-names), for fixtures. */
function stepQueue(flow: string, step: string, index: number): string {
  const readable = `${flow}__${step}`.toLowerCase();
  return readable.length <= 47 ? readable : `${flow}__${index}`.toLowerCase();
}

/** A definition as contracts.md §1 describes it; loosely typed so tests can corrupt it. */
export interface Definition {
  flow_slug: string;
  queue_mode: string;
  options: Record<string, number | boolean | null>;
  steps: {
    step_slug: string;
    step_index: number;
    step_type: string;
    deps: string[];
    map_source: string | null;
    required_input_pattern: Record<string, unknown> | null;
    forbidden_input_pattern: Record<string, unknown> | null;
    when_unmet: string;
    when_exhausted: string;
    options: Record<string, number | null>;
  }[];
  routes: { step_slug: string; queue_name: string }[];
}

/** Builds the definition JSON a worker would send. */
export function definition(spec: FlowSpec): Definition {
  const mode = spec.queueMode ?? "flow";
  return {
    flow_slug: spec.slug,
    queue_mode: mode,
    options: {
      max_attempts: spec.maxAttempts ?? null,
      base_delay: spec.baseDelay ?? null,
      timeout: spec.timeout ?? null,
      events: spec.events ?? null,
      progress_interval: spec.progressInterval ?? null,
    },
    steps: spec.steps.map((step, index) => ({
      step_slug: step.slug,
      step_index: index,
      step_type: step.type ?? "single",
      deps: [...(step.deps ?? [])].sort(),
      map_source: step.mapSource ?? null,
      required_input_pattern: step.if ?? null,
      forbidden_input_pattern: step.ifNot ?? null,
      when_unmet: step.whenUnmet ?? "skip",
      when_exhausted: step.whenExhausted ?? "fail",
      options: {
        max_attempts: step.maxAttempts ?? null,
        base_delay: step.baseDelay ?? null,
        timeout: step.timeout ?? null,
        start_delay: step.startDelay ?? null,
      },
    })),
    routes: spec.steps.map((step, index) => ({
      step_slug: step.slug,
      queue_name: mode === "flow"
        ? spec.slug.toLowerCase()
        : stepQueue(spec.slug, step.slug, index),
    })),
  };
}

/** Compiles a definition and returns the outcome object. */
export async function compile(
  sql: Sql,
  def: Definition,
  environment = "production",
): Promise<
  {
    outcome: string;
    differences: string[];
    live_workers?: number;
    deleted_runs?: Record<string, number>;
  }
> {
  const [row] = await sql`
    select sluice.ensure_flow_compiled(${json(sql, def)}::jsonb, ${environment}) as result
  `;
  return row.result;
}

/** Compiles a flow spec that must be new. */
export async function compileFlow(sql: Sql, spec: FlowSpec): Promise<void> {
  const result = await compile(sql, definition(spec));
  if (result.outcome !== "compiled") throw new Error(`expected compiled, got ${result.outcome}`);
}

/** Starts a run and returns its id. */
export async function startFlow(sql: Sql, flow: string, input: unknown): Promise<string> {
  const [row] = await sql`
    select sluice.start_flow(${flow}, ${sql.json(input as postgres.JSONValue)}::jsonb) as run_id
  `;
  return row.run_id;
}

/** Tracks a worker function and registers a worker on one queue; returns the worker id. */
export async function registerWorker(
  sql: Sql,
  queue: string,
  flow: string,
  functionName = `${flow}_worker`,
): Promise<string> {
  const workerId = crypto.randomUUID();
  await sql`select sluice.track_worker_function(${functionName})`;
  await sql`select sluice.register_worker(${workerId}, ${functionName}, ${queue}, ${flow}, null)`;
  return workerId;
}

/** A message as pgmq.read returns it. */
export interface Message {
  msg_id: string;
  read_ct: number;
  message: { run_id: string; step_slug: string; task_index: number; flow_slug: string };
}

/** Reads up to qty visible messages. */
export function read(sql: Sql, queue: string, qty = 100, vt = 30): Promise<Message[]> {
  return sql<Message[]>`select msg_id, read_ct, message from pgmq.read(${queue}, ${vt}, ${qty})`;
}

/** The claimed task of a start_tasks result. */
export interface ClaimedTask {
  message_id: string;
  flow_slug: string;
  run_id: string;
  step_slug: string;
  task_index: number;
  attempt: number;
  worker_id: string;
  timeout_seconds: number;
  /** The number of the last attempt of the current retry round. */
  max_attempts: number;
  input: unknown;
  flow_input: unknown;
}

/** The fencing token of a claimed attempt: the task, its attempt and the claiming worker. */
export interface AttemptToken {
  run_id: string;
  step_slug: string;
  task_index: number;
  attempt: number;
  worker_id: string;
}

/** What start_tasks returns. */
export interface ClaimResult {
  outcome: "claimed" | "fatal" | "fenced";
  tasks: ClaimedTask[];
  duplicates: string[];
  archived: string[];
  fatal: { message_id: string; class: string }[];
}

/** Every (flow, step) pair of a compiled flow, as start_tasks takes them. */
export async function supportedPairs(sql: Sql, flow: string) {
  return await sql<{ flow_slug: string; step_slug: string }[]>`
    select flow_slug, step_slug from sluice.steps where flow_slug = ${flow} order by step_index
  `;
}

/** Claims message ids on a queue for a worker supporting every step of `flow`. */
export async function startTasks(
  sql: Sql,
  queue: string,
  ids: readonly (string | number)[],
  workerId: string,
  supported: readonly { flow_slug: string; step_slug: string }[],
): Promise<ClaimResult> {
  const [row] = await sql`
    select sluice.start_tasks(
      ${queue}, ${bigintArray(ids)}::bigint[], ${workerId},
      ${sql.json(supported as unknown as postgres.JSONValue)}::jsonb
    ) as result
  `;
  return row.result;
}

/** Reads and claims everything visible on a queue. */
export async function readAndClaim(
  sql: Sql,
  queue: string,
  workerId: string,
  flow: string,
): Promise<ClaimedTask[]> {
  const messages = await read(sql, queue);
  if (messages.length === 0) return [];
  const result = await startTasks(
    sql,
    queue,
    messages.map((m) => m.msg_id),
    workerId,
    await supportedPairs(sql, flow),
  );
  if (result.outcome !== "claimed") throw new Error(`claim was fatal: ${JSON.stringify(result)}`);
  return result.tasks;
}

/** Completes one claimed attempt; returns 'completed' | 'stale'. */
export async function completeTask(
  sql: Sql,
  task: AttemptToken,
  output: unknown,
): Promise<string> {
  const [row] = await sql`
    select sluice.complete_task(
      ${task.run_id}, ${task.step_slug}, ${task.task_index}, ${task.attempt}, ${task.worker_id},
      ${sql.json(output as postgres.JSONValue)}::jsonb
    ) as outcome
  `;
  return row.outcome;
}

/** Fails one claimed attempt; returns 'retried' | 'failed' | 'stale'. */
export async function failTask(
  sql: Sql,
  task: AttemptToken,
  error: string,
  retryDelaySeconds: number | null = null,
): Promise<string> {
  const [row] = await sql`
    select sluice.fail_task(
      ${task.run_id}, ${task.step_slug}, ${task.task_index}, ${task.attempt}, ${task.worker_id},
      ${error}, ${retryDelaySeconds}::double precision
    ) as outcome
  `;
  return row.outcome;
}

/** The run row. */
export async function run(sql: Sql, runId: string) {
  const [row] = await sql`select * from sluice.runs where run_id = ${runId}`;
  return row;
}

/** Task statuses of a run as "step:index" -> status. */
export async function taskStatuses(sql: Sql, runId: string): Promise<Record<string, string>> {
  const rows = await sql<{ step_slug: string; task_index: number; status: string }[]>`
    select step_slug, task_index, status from sluice.step_tasks where run_id = ${runId}
  `;
  return Object.fromEntries(rows.map((r) => [`${r.step_slug}:${r.task_index}`, r.status]));
}

/** Step statuses of a run as step -> status. */
export async function stepStatuses(sql: Sql, runId: string): Promise<Record<string, string>> {
  const rows = await sql<{ step_slug: string; status: string }[]>`
    select step_slug, status from sluice.step_states where run_id = ${runId}
  `;
  return Object.fromEntries(rows.map((r) => [r.step_slug, r.status]));
}

/** Live (not archived) messages of a run's tasks, counted on each task's own queue. */
export async function liveMessages(sql: Sql, runId: string): Promise<number> {
  const tasks = await sql<{ queue_name: string; message_id: string }[]>`
    select queue_name, message_id from sluice.step_tasks where run_id = ${runId}
  `;
  let live = 0;
  for (const task of tasks) {
    const [row] = await sql.unsafe(
      `select count(*)::int as n from pgmq.${"q_" + task.queue_name} where msg_id = $1`,
      [task.message_id],
    );
    live += row.n;
  }
  return live;
}

/** Runs a whole run to completion on one queue with fixed outputs per step. */
export async function drive(
  sql: Sql,
  queue: string,
  flow: string,
  outputs: (task: ClaimedTask) => unknown,
): Promise<void> {
  const workerId = await registerWorker(sql, queue, flow, `${flow}_${crypto.randomUUID()}`);
  for (let round = 0; round < 100; round++) {
    const tasks = await readAndClaim(sql, queue, workerId, flow);
    if (tasks.length === 0) return;
    for (const task of tasks) await completeTask(sql, task, outputs(task));
  }
  throw new Error("drive: the run did not settle within 100 rounds");
}

/** A jsonb query parameter from any JSON-compatible value (cast it with `::jsonb`). */
export function json(sql: Sql, value: unknown) {
  return sql.json(value as postgres.JSONValue);
}

/**
 * A `bigint[]` parameter as an array literal (cast it with `::bigint[]`). postgres.js serializes
 * `sql.array()` from the array types it fetches on connect, which a fresh client may not have yet.
 */
export function bigintArray(ids: readonly (string | number | bigint)[]): string {
  return `{${ids.join(",")}}`;
}
