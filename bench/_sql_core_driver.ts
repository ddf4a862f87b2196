/**
 * Drives the SQL core the way workers do, with no-op handlers: every connection first starts its
 * share of the runs (`sluice.start_flow`), then loops `pgmq.read` -> `sluice.start_tasks` ->
 * `sluice.complete_task` (one call per task) or `sluice.complete_tasks` (one call per claimed
 * batch) until every run has completed.
 *
 * @module
 */
import postgres, { type Sql } from "postgres";
import { processCpuMs } from "./_machine.ts";
import type { Workload } from "./_sql_core_flows.ts";

/** How a worker reports its results. */
export type CompletionMode = "single" | "batched";

/** The call types whose client-side time is recorded. */
export type CallType = "start_flow" | "read" | "start_tasks" | "complete";

/** Client-side time spent in one call type: round trip included. */
export interface CallTime {
  /** Number of calls. */
  calls: number;
  /** Their summed duration in milliseconds. */
  ms: number;
}

/** What one repetition measured. */
export interface RepetitionResult {
  /** Milliseconds from the first `start_flow` call to the return of the last run's completion. */
  wallMs: number;
  /** Tasks completed. */
  tasks: number;
  /** Per run: `completed_at - started_at` in milliseconds, from `sluice.runs`. */
  latenciesMs: number[];
  /** Client-side time per call type, summed over all connections. */
  calls: Record<CallType, CallTime>;
  /**
   * CPU milliseconds the connections' server backends used, or `undefined` when the server's
   * processes are not visible here (a remote `DATABASE_URL`). Unlike wall time, it hardly depends
   * on what else the machine is running.
   */
  serverCpuMs: number | undefined;
  /** CPU milliseconds of this (client) process. */
  clientCpuMs: number;
}

/** One worker connection: its own single-connection client and registered worker. */
interface Connection {
  sql: Sql;
  workerId: string;
  /** Process id of the server backend serving this client's one connection, if it runs here. */
  backendPid: number | undefined;
}

/** Worker connections for one workload; disposing them stops the workers and ends the clients. */
export interface Connections extends AsyncDisposable {
  /** The connections, one client each. */
  list: Connection[];
}

/** How long an idle worker waits before reading an empty queue again. */
const EMPTY_READ_PAUSE_MS = 5;

/**
 * Visibility timeout of `pgmq.read`: the claim's own (the flows' task timeout of 60 s + 2 s,
 * `_sql_core_flows.ts`), so that `start_tasks` leaves it as the read set it instead of updating
 * every message row a second time. Set `SLUICE_BENCH_READ_VT` to measure another reader (e.g. 30:
 * every claim then sets the visibility again).
 */
const READ_VT_SECONDS = Number(Deno.env.get("SLUICE_BENCH_READ_VT") ?? 62);

/** Outcome of `sluice.start_tasks` (docs/internals/contracts.md §3). */
interface Claim {
  outcome: "claimed" | "fatal";
  tasks: {
    run_id: string;
    step_slug: string;
    task_index: number;
    attempt: number;
    worker_id: string;
    input: postgres.JSONValue;
  }[];
  duplicates: string[];
  archived: string[];
  fatal: unknown[];
}

/**
 * Opens `count` single-connection clients (`prepare: false`, like Supabase's pooler needs) and
 * registers a worker of function `bench` on the workload's queue for each. With `localServer`, the
 * server runs on this machine and its backends' CPU time is measured.
 */
export async function openConnections(
  url: string,
  count: number,
  workload: Workload,
  localServer: boolean,
): Promise<Connections> {
  const list: Connection[] = [];
  const dispose = async () => {
    await Promise.all(list.map(async ({ sql, workerId }) => {
      await sql`select sluice.stop_worker(${workerId}::uuid)`;
      await sql.end();
    }));
  };
  try {
    for (let i = 0; i < count; i++) {
      const sql = postgres(url, { max: 1, prepare: false, onnotice: () => {} });
      const workerId = crypto.randomUUID();
      const [{ pid }] = await sql<{ pid: number }[]>`select pg_backend_pid() as pid`;
      list.push({ sql, workerId, backendPid: localServer ? pid : undefined });
      await sql`select sluice.track_worker_function('bench')`;
      await sql`
        select sluice.register_worker(
          ${workerId}::uuid, 'bench', ${workload.queue}, ${workload.shape}, null
        )
      `;
    }
  } catch (error) {
    await dispose().catch(() => {});
    throw error;
  }
  return { list, [Symbol.asyncDispose]: dispose };
}

/** Compiles the workload's flow (`sluice.ensure_flow_compiled`, environment `production`). */
export async function compileWorkload(
  sql: Sql,
  workload: Workload,
  events = true,
): Promise<void> {
  // Live run events are a runtime option: compiling again with the other value switches them.
  // A subflow's children compile first: a parent naming a flow that is not compiled is refused.
  for (const flow of [...workload.children ?? [], workload.definition]) {
    const definition = sql.json({ ...flow, options: { ...flow.options, events } });
    const [{ result }] = await sql<{ result: { outcome: string } }[]>`
      select sluice.ensure_flow_compiled(${definition}::jsonb, 'production') as result
    `;
    if (result.outcome !== "compiled" && result.outcome !== "verified") {
      throw new Error(`Cannot compile ${flow.flow_slug}: ${JSON.stringify(result)}`);
    }
  }
}

/** State shared by the connection loops of one repetition. */
interface Progress {
  nextRun: number;
  runIds: string[];
  leafDone: number;
  finishedAt: number;
  calls: Record<CallType, CallTime>;
  onComplete: CompletionListener | undefined;
}

/** Called after each completion call with the results it reported and its duration. */
export type CompletionListener = (results: { step_slug: string }[], ms: number) => void;

/** What {@linkcode drainTasks} measured: a repetition without runs of its own. */
export type DrainResult = Omit<RepetitionResult, "latenciesMs">;

function newProgress(onComplete?: CompletionListener): Progress {
  return {
    nextRun: 0,
    runIds: [],
    leafDone: 0,
    finishedAt: 0,
    calls: {
      start_flow: { calls: 0, ms: 0 },
      read: { calls: 0, ms: 0 },
      start_tasks: { calls: 0, ms: 0 },
      complete: { calls: 0, ms: 0 },
    },
    onComplete,
  };
}

/** Runs `body` on every connection at once; measures wall time to `finishedAt` and CPU time. */
async function measured(
  connections: Connections,
  progress: Progress,
  body: (connection: Connection) => Promise<void>,
): Promise<DrainResult & { tasks: 0 }> {
  const pids = connections.list.flatMap((c) => c.backendPid ?? []);
  const serverCpuBefore = pids.length > 0 ? await processCpuMs(pids) : undefined;
  const clientCpuBefore = await processCpuMs(["self"]);
  const startedAt = performance.now();
  await Promise.all(connections.list.map(body));
  const serverCpuAfter = pids.length > 0 ? await processCpuMs(pids) : undefined;
  const clientCpuAfter = await processCpuMs(["self"]);
  return {
    wallMs: progress.finishedAt - startedAt,
    tasks: 0,
    calls: progress.calls,
    serverCpuMs: serverCpuAfter === undefined || serverCpuBefore === undefined
      ? undefined
      : serverCpuAfter - serverCpuBefore,
    clientCpuMs: (clientCpuAfter ?? 0) - (clientCpuBefore ?? 0),
  };
}

/**
 * Starts `runs` runs of the workload and works them off with every connection; resolves once all
 * completed. Throws when anything unexpected happens (a fatal claim, a duplicate, a completion
 * that was not applied): the figures would not be comparable.
 */
export async function runRepetition(
  connections: Connections,
  workload: Workload,
  mode: CompletionMode,
  runs: number,
  batchSize: number,
): Promise<RepetitionResult> {
  const progress = newProgress();
  const result = await measured(connections, progress, async (connection) => {
    await produce(connection, workload, runs, progress);
    await work(connection, workload, mode, runs, batchSize, progress);
  });
  const latenciesMs = await runLatencies(connections.list[0].sql, progress.runIds);
  return { ...result, tasks: runs * workload.tasksPerRun, latenciesMs };
}

/**
 * Works off tasks already queued for the workload, with every connection, until `leafTasks` tasks
 * of its leaf step have completed; `tasks` of the result is `tasks` as given (what the caller
 * knows was completed in all). `onComplete` sees every completion call.
 */
export async function drainTasks(
  connections: Connections,
  workload: Workload,
  mode: CompletionMode,
  leafTasks: number,
  tasks: number,
  batchSize: number,
  onComplete?: CompletionListener,
): Promise<DrainResult> {
  const progress = newProgress(onComplete);
  const result = await measured(
    connections,
    progress,
    (connection) => work(connection, workload, mode, leafTasks, batchSize, progress),
  );
  return { ...result, tasks };
}

async function timed<T>(progress: Progress, type: CallType, call: () => Promise<T>): Promise<T> {
  const start = performance.now();
  const result = await call();
  progress.calls[type].calls++;
  progress.calls[type].ms += performance.now() - start;
  return result;
}

async function produce(
  { sql }: Connection,
  workload: Workload,
  runs: number,
  progress: Progress,
): Promise<void> {
  while (progress.nextRun < runs) {
    const input = sql.json({ n: progress.nextRun++ });
    const [{ run_id }] = await timed(
      progress,
      "start_flow",
      () =>
        sql<
          { run_id: string }[]
        >`select sluice.start_flow(${workload.shape}, ${input}::jsonb) as run_id`,
    );
    progress.runIds.push(run_id);
  }
}

async function work(
  { sql, workerId }: Connection,
  workload: Workload,
  mode: CompletionMode,
  leafTasks: number,
  batchSize: number,
  progress: Progress,
): Promise<void> {
  // A subflow shape's child runs have tasks on their flow's queue: read the queues in turn.
  const queues = [workload.queue, ...(workload.children ?? []).map((c) => c.routes[0].queue_name)];
  let turn = 0;
  let emptyReads = 0;
  const supported = sql.json(workload.supported);
  while (progress.leafDone < leafTasks) {
    const queue = queues[turn++ % queues.length];
    const messages = await timed(
      progress,
      "read",
      () =>
        sql<{ msg_id: string }[]>`
        select msg_id from pgmq.read(${queue}, ${READ_VT_SECONDS}, ${batchSize})
      `,
    );
    if (messages.length === 0) {
      // A pause only once every queue was found empty in a row.
      if (++emptyReads >= queues.length) {
        emptyReads = 0;
        await new Promise((resolve) => setTimeout(resolve, EMPTY_READ_PAUSE_MS));
      }
      continue;
    }
    emptyReads = 0;
    const ids = messages.map((m) => m.msg_id);
    const [{ claim }] = await timed(
      progress,
      "start_tasks",
      () =>
        sql<{ claim: Claim }[]>`
        select sluice.start_tasks(${queue}, ${ids}::bigint[], ${workerId}::uuid, ${supported}::jsonb)
          as claim
      `,
    );
    if (
      claim.outcome !== "claimed" || claim.tasks.length !== messages.length ||
      claim.duplicates.length > 0 || claim.archived.length > 0
    ) {
      throw new Error(`Unexpected claim on queue "${queue}": ${JSON.stringify(claim)}`);
    }
    const results = claim.tasks.map((task) => ({
      run_id: task.run_id,
      step_slug: task.step_slug,
      task_index: task.task_index,
      attempt: task.attempt,
      worker_id: task.worker_id,
      output: workload.output(task.step_slug, task.input),
      ...(workload.waits?.(task.step_slug) === undefined
        ? {}
        : { waits: workload.waits(task.step_slug) }),
    }));
    const completeStart = performance.now();
    if (mode === "single") {
      if (workload.waits !== undefined) {
        throw new Error(`${workload.shape} starts subflows: only complete_tasks carries waits`);
      }
      for (const r of results) {
        const output = sql.json(r.output);
        const [{ outcome }] = await timed(
          progress,
          "complete",
          () =>
            sql<{ outcome: string }[]>`
            select sluice.complete_task(
              ${r.run_id}::uuid, ${r.step_slug}, ${r.task_index}::integer, ${r.attempt}::integer,
              ${r.worker_id}::uuid, ${output}::jsonb
            ) as outcome
          `,
        );
        if (outcome !== "completed") {
          throw new Error(`complete_task was not applied: ${JSON.stringify(r)}`);
        }
      }
    } else {
      const batch = sql.json(results);
      const [{ outcome }] = await timed(
        progress,
        "complete",
        () =>
          sql<{ outcome: { completed: number } }[]>`
          select sluice.complete_tasks(${batch}::jsonb) as outcome
        `,
      );
      if (outcome.completed !== results.length) {
        throw new Error(`complete_tasks applied ${outcome.completed} of ${results.length} results`);
      }
    }
    progress.onComplete?.(results, performance.now() - completeStart);
    progress.leafDone += results.filter((r) => r.step_slug === workload.leafStep).length;
    if (progress.leafDone >= leafTasks && progress.finishedAt === 0) {
      progress.finishedAt = performance.now();
    }
  }
}

async function runLatencies(sql: Sql, runIds: string[]): Promise<number[]> {
  const rows = await sql<{ status: string; ms: number }[]>`
    select status, extract(epoch from completed_at - started_at)::float8 * 1000 as ms
    from sluice.runs
    where run_id = any (${runIds}::uuid[])
  `;
  const unfinished = rows.filter((row) => row.status !== "completed").length;
  if (rows.length !== runIds.length || unfinished > 0) {
    throw new Error(`${unfinished} of ${runIds.length} runs did not complete`);
  }
  return rows.map((row) => row.ms);
}
