/**
 * The latency floor of the SQL core for one `linear3` run: the seven statements a run needs when
 * workers are idle (`start_flow`, then read-and-claim and `complete_tasks` once per step), sent back
 * to back by one client on one connection, with no worker, no NOTIFY wake-up and no handler. Next to
 * the workers' idle latency it tells how much of that latency is the SQL's and how much the
 * worker's.
 *
 * @module
 */
import postgres from "postgres";
import { usePromptSetImmediate } from "./_prompt_set_immediate.ts";
import { type LatencyResult, readLatencies } from "./_worker_driver.ts";

interface Claim {
  outcome: string;
  tasks: {
    run_id: string;
    step_slug: string;
    task_index: number;
    attempt: number;
    worker_id: string;
  }[];
}

/** A literal for the values this file inlines: slugs, UUIDs and JSON it built itself. */
function literal(value: string): string {
  return `'${value.replaceAll("'", "''")}'`;
}

/**
 * Runs `warmUp + runs` runs of the flow `flowSlug` (a compiled `linear3` whose queue has no
 * worker) one at a time, pausing `idleMs` before each, and returns the last `runs` runs' timings.
 * Client wall time ends when the last `complete_tasks` returns: the run completed in it.
 */
export async function runLatencyFloor(
  url: string,
  flowSlug: string,
  runs: number,
  warmUp: number,
  idleMs = 50,
): Promise<LatencyResult> {
  // An ideal client: statements leave at once (see _prompt_set_immediate.ts).
  using _prompt = usePromptSetImmediate();
  const sql = postgres(url, { max: 1, prepare: false, onnotice: () => {} });
  const queue = flowSlug.toLowerCase();
  const workerId = crypto.randomUUID();
  const supported = JSON.stringify(
    ["a", "b", "c"].map((step) => ({ flow_slug: flowSlug, step_slug: step })),
  );
  const wallMs: number[] = [];
  const runIds: string[] = [];
  try {
    await sql`select sluice.track_worker_function('bench_latency_floor')`;
    await sql`select sluice.register_worker(
      ${workerId}::uuid, 'bench_latency_floor', ${queue}, ${flowSlug}, null)`;
    for (let i = 0; i < warmUp + runs; i++) {
      await new Promise((resolve) => setTimeout(resolve, idleMs));
      const started = performance.now();
      const [{ run_id: runId }] = await sql.unsafe<{ run_id: string }[]>(
        `select sluice.start_flow(${literal(flowSlug)}, '{"n":${i}}'::jsonb) as run_id`,
      );
      for (let step = 0; step < 3; step++) {
        // The statement the worker sends (src/db/worker_queries.ts): read and claim in one.
        const [{ claim }] = await sql.unsafe<{ claim: Claim }[]>(`
          with batch as materialized (
            select coalesce(array_agg(m.msg_id order by m.msg_id), '{}'::bigint[]) as ids
            from pgmq.read(${literal(queue)}, 30, 10) m
          )
          select sluice.start_tasks(${literal(queue)}, b.ids, '${workerId}'::uuid,
            ${literal(supported)}::jsonb) as claim
          from batch b`);
        if (claim.outcome !== "claimed" || claim.tasks.length !== 1) {
          throw new Error(`Unexpected claim in the latency floor: ${JSON.stringify(claim)}`);
        }
        const results = claim.tasks.map((task) => ({
          run_id: task.run_id,
          step_slug: task.step_slug,
          task_index: task.task_index,
          attempt: task.attempt,
          worker_id: task.worker_id,
          output: { ok: true },
        }));
        await sql.unsafe(
          `select sluice.complete_tasks(${literal(JSON.stringify(results))}::jsonb) as outcome`,
        );
      }
      if (i >= warmUp) {
        wallMs.push(performance.now() - started);
        runIds.push(runId);
      }
    }
    return await readLatencies(sql, runIds, wallMs);
  } finally {
    await sql`select sluice.stop_worker(${workerId}::uuid)`.catch(() => {});
    await sql.end();
  }
}
