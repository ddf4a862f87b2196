/**
 * pgflow 0.14.1 as a benchmark opponent: loads its unchanged SQL at run time into a database of
 * its own (never into the product), defines the benchmark's shapes with `pgflow.create_flow` /
 * `pgflow.add_step`, and drives it with pgflow's worker protocol: `pgmq.read`, then
 * `pgflow.start_tasks`, then one `pgflow.complete_task` per task. The directory holding the SQL
 * (`migrations/`, `stubs.sql`, a README saying how to load it) is given by the caller.
 *
 * @module
 */
import postgres, { type Sql } from "postgres";
import { processCpuMs } from "./_machine.ts";
import type { Workload } from "./_sql_core_flows.ts";

/** The lines of pgflow's migrations that are skipped: the extensions are there already or stubbed. */
const SKIPPED_LINES = [
  'CREATE EXTENSION IF NOT EXISTS "pgmq" WITH SCHEMA "pgmq";',
  'CREATE EXTENSION IF NOT EXISTS "pg_net" WITH SCHEMA "public";',
  'CREATE EXTENSION IF NOT EXISTS "pg_cron";',
];

/** The pgflow SQL directory is missing or is not pgflow 0.14.1's as expected. */
export class PgflowSourceError extends Error {
  override readonly name = "PgflowSourceError";
  /** The directory that was given. */
  readonly directory: string;
  constructor(directory: string, problem: string) {
    super(
      `bench: pgflow's SQL at ${JSON.stringify(directory)} ${problem} (pass --pgflow DIR: a ` +
        "directory with pgflow 0.14.1's migrations/ and stubs.sql)",
    );
    this.directory = directory;
  }
}

/**
 * Loads pgflow into the (empty) database at `url`: the PGMQ extension, the stubs of the
 * Supabase-only objects its migrations call (`realtime.send` does nothing, which makes pgflow's
 * figures optimistic), then its migrations in file-name order with the three extension lines
 * skipped, each of which must occur exactly once.
 */
export async function loadPgflow(url: string, directory: string): Promise<void> {
  let names: string[];
  let stubs: string;
  try {
    names = [...Deno.readDirSync(`${directory}/migrations`)]
      .map((entry) => entry.name)
      .filter((name) => name.endsWith(".sql"))
      .sort();
    stubs = await Deno.readTextFile(`${directory}/stubs.sql`);
  } catch (error) {
    throw new PgflowSourceError(directory, `cannot be read: ${(error as Error).message}`);
  }
  if (names.length === 0) throw new PgflowSourceError(directory, "has no migrations");
  const seen = new Map(SKIPPED_LINES.map((line) => [line, 0]));
  const sql = postgres(url, { max: 1, prepare: false, onnotice: () => {} });
  try {
    await sql`create extension if not exists pgmq`;
    await sql.unsafe(stubs);
    for (const name of names) {
      const text = await Deno.readTextFile(`${directory}/migrations/${name}`);
      const kept = text.split("\n").filter((line) => {
        const skipped = seen.get(line.trim());
        if (skipped === undefined) return true;
        seen.set(line.trim(), skipped + 1);
        return false;
      });
      await sql.begin((tx) => tx.unsafe(kept.join("\n")));
    }
  } finally {
    await sql.end();
  }
  for (const [line, count] of seen) {
    if (count !== 1) {
      throw new PgflowSourceError(
        directory,
        `has ${JSON.stringify(line)} ${count} times, not once`,
      );
    }
  }
}

/**
 * Defines `workload`'s flow in pgflow: the same slug, steps, dependencies and map steps, with
 * the flow options sluice's definition uses (3 attempts, base delay 1 s, timeout 60 s).
 */
export async function definePgflowWorkload(sql: Sql, workload: Workload): Promise<void> {
  const { flow_slug: slug, options, steps } = workload.definition;
  await sql`select pgflow.create_flow(${slug}, ${options.max_attempts}, ${options.base_delay},
    ${options.timeout})`;
  for (const step of steps) {
    if (step.step_type === "subflow") {
      throw new Error(`pgflow has no subflows: shape ${workload.shape} cannot run on it`);
    }
    await sql`select pgflow.add_step(${slug}, ${step.step_slug}, ${step.deps}::text[],
      step_type => ${step.step_type})`;
  }
}

/** One pgflow worker connection. */
interface PgflowConnection {
  sql: Sql;
  workerId: string;
  backendPid: number | undefined;
}

/** pgflow worker connections; disposing them ends the clients. */
export interface PgflowConnections extends AsyncDisposable {
  /** The connections, one client each. */
  list: PgflowConnection[];
}

/**
 * Opens `count` single-connection clients and registers each as a pgflow worker of the
 * workload's queue (pgflow's `start_tasks` records the worker on the task).
 */
export async function openPgflowConnections(
  url: string,
  count: number,
  workload: Workload,
  localServer: boolean,
): Promise<PgflowConnections> {
  const list: PgflowConnection[] = [];
  const dispose = async () => {
    await Promise.all(list.map(({ sql }) => sql.end()));
  };
  try {
    for (let i = 0; i < count; i++) {
      const sql = postgres(url, { max: 1, prepare: false, onnotice: () => {} });
      const workerId = crypto.randomUUID();
      const [{ pid }] = await sql<{ pid: number }[]>`select pg_backend_pid() as pid`;
      list.push({ sql, workerId, backendPid: localServer ? pid : undefined });
      await sql`
        insert into pgflow.workers (worker_id, queue_name, function_name)
        values (${workerId}::uuid, ${workload.definition.flow_slug}, 'bench')
      `;
    }
  } catch (error) {
    await dispose().catch(() => {});
    throw error;
  }
  return { list, [Symbol.asyncDispose]: dispose };
}

/** What one pgflow repetition measured (the fields of the SQL core driver's result it shares). */
export interface PgflowRepetition {
  /** Milliseconds from the first `start_flow` to the completion of the last run. */
  wallMs: number;
  /** Tasks completed. */
  tasks: number;
  /** CPU milliseconds of the connections' server backends, when they run on this machine. */
  serverCpuMs: number | undefined;
}

/** Visibility timeout of the reads: the flows' task timeout of 60 s + 2 s, as sluice's driver. */
const READ_VT_SECONDS = 62;

/** How long an idle connection waits before reading the empty queue again. */
const EMPTY_READ_PAUSE_MS = 5;

/**
 * Starts `runs` runs and works them off on every connection with pgflow's protocol; resolves once
 * every run's leaf task completed ({@linkcode verifyRunOutputs} checks the runs). Throws on anything unexpected (a
 * task not claimed, a completion not applied): the figures would not count.
 */
export async function runPgflowRepetition(
  connections: PgflowConnections,
  workload: Workload,
  runs: number,
  batchSize: number,
): Promise<PgflowRepetition> {
  const slug = workload.definition.flow_slug;
  const progress = { nextRun: 0, leafDone: 0, finishedAt: 0 };
  const pids = connections.list.flatMap((c) => c.backendPid ?? []);
  const cpuBefore = pids.length > 0 ? await processCpuMs(pids) : undefined;
  const startedAt = performance.now();
  await Promise.all(connections.list.map(async ({ sql, workerId }) => {
    while (progress.nextRun < runs) {
      const input = sql.json({ n: progress.nextRun++ });
      await sql`select run_id from pgflow.start_flow(${slug}, ${input}::jsonb)`;
    }
    while (progress.leafDone < runs) {
      const messages = await sql<{ msg_id: string }[]>`
        select msg_id from pgmq.read(${slug}, ${READ_VT_SECONDS}, ${batchSize})
      `;
      if (messages.length === 0) {
        await new Promise((resolve) => setTimeout(resolve, EMPTY_READ_PAUSE_MS));
        continue;
      }
      const ids = messages.map((m) => m.msg_id);
      const tasks = await sql<
        { run_id: string; step_slug: string; task_index: number; input: postgres.JSONValue }[]
      >`
        select run_id, step_slug, task_index, input
        from pgflow.start_tasks(${slug}, ${ids}::bigint[], ${workerId}::uuid)
      `;
      if (tasks.length !== messages.length) {
        throw new Error(`pgflow claimed ${tasks.length} of ${messages.length} messages`);
      }
      for (const task of tasks) {
        const output = sql.json(workload.output(task.step_slug, task.input));
        const rows = await sql<{ status: string }[]>`
          select status from pgflow.complete_task(
            ${task.run_id}::uuid, ${task.step_slug}, ${task.task_index}::integer, ${output}::jsonb
          )
        `;
        if (rows.length !== 1 || rows[0].status !== "completed") {
          throw new Error(`pgflow complete_task was not applied: ${JSON.stringify(task)}`);
        }
        if (task.step_slug === workload.leafStep && ++progress.leafDone === runs) {
          progress.finishedAt = performance.now();
        }
      }
    }
  }));
  const cpuAfter = pids.length > 0 ? await processCpuMs(pids) : undefined;
  return {
    wallMs: progress.finishedAt - startedAt,
    tasks: runs * workload.tasksPerRun,
    serverCpuMs: cpuAfter === undefined || cpuBefore === undefined
      ? undefined
      : cpuAfter - cpuBefore,
  };
}

/**
 * Checks that the runs of `workload`'s flow in `schema` (`sluice` or `pgflow`: both keep a run's
 * output as an object of its leaf steps' outputs) number `total` and all completed with the output
 * the no-op handlers imply; throws otherwise.
 */
export async function verifyRunOutputs(
  sql: Sql,
  schema: "sluice" | "pgflow",
  workload: Workload,
  total: number,
): Promise<void> {
  const expected = sql.json(workload.output(workload.leafStep, null));
  const [row] = await sql<{ bad: number; runs: number }[]>`
    select count(*) filter (
        where status <> 'completed' or output -> ${workload.leafStep} is distinct from ${expected}::jsonb
      )::int as bad,
      count(*)::int as runs
    from ${sql(schema)}.runs
    where flow_slug = ${workload.definition.flow_slug}
  `;
  if (row.runs !== total || row.bad > 0) {
    throw new Error(
      `${schema}: ${row.runs} runs of ${workload.shape} (expected ${total}), ${row.bad} of them ` +
        "not completed with the expected output",
    );
  }
}
