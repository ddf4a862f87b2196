/**
 * The queue underneath sluice on its own: `pgmq.read` + `pgmq.archive` of messages sent up front,
 * by several consumers at once, with no sluice function in the loop. The reference that the SQL
 * core's throughput is a share of (issue 31: map100 through the worker's protocol against raw
 * PGMQ measured in the same run).
 *
 * @module
 */
import postgres, { type Sql } from "postgres";

/** The queue this module creates (and drops) for its measurement. */
const QUEUE = "bench_raw_pgmq";

/** What {@linkcode rawPgmq} measured. */
export interface RawPgmqResult {
  /** Messages read and archived. */
  messages: number;
  /** Milliseconds from the first read to the last archive. */
  wallMs: number;
}

/** Creates the queue and sends `messages` messages of the size of a task's (`{run_id, ...}`). */
export async function fillRawQueue(sql: Sql, messages: number): Promise<void> {
  await sql`select pgmq.create(${QUEUE})`;
  const body = {
    flow_slug: "raw",
    run_id: crypto.randomUUID(),
    step_slug: "each",
    task_index: 0,
  };
  for (let sent = 0; sent < messages; sent += 1000) {
    const count = Math.min(1000, messages - sent);
    const bodies = Array.from({ length: count }, (_, i) => ({ ...body, task_index: sent + i }));
    await sql`select pgmq.send_batch(${QUEUE}, array(
      select jsonb_array_elements(${sql.json(bodies)}::jsonb)))`;
  }
}

/** Drops the queue {@linkcode fillRawQueue} made. */
export async function dropRawQueue(sql: Sql): Promise<void> {
  await sql`select pgmq.drop_queue(${QUEUE})`;
}

/**
 * Reads and archives every message of the filled queue with `consumers` connections
 * (`prepare: false`, one client each), `batchSize` per read.
 */
export async function drainRawQueue(
  url: string,
  messages: number,
  consumers: number,
  batchSize: number,
): Promise<RawPgmqResult> {
  const clients = Array.from(
    { length: consumers },
    () => postgres(url, { max: 1, prepare: false, onnotice: () => {} }),
  );
  try {
    // Connect first, so that the timed stretch is the queue's work.
    await Promise.all(clients.map((sql) => sql`select 1`));
    let archived = 0;
    const startedAt = performance.now();
    await Promise.all(clients.map(async (sql) => {
      while (archived < messages) {
        const rows = await sql<{ msg_id: string }[]>`
          select msg_id from pgmq.read(${QUEUE}, 30, ${batchSize})
        `;
        if (rows.length === 0) {
          await new Promise((resolve) => setTimeout(resolve, 5));
          continue;
        }
        await sql`select pgmq.archive(${QUEUE}, ${rows.map((r) => r.msg_id)}::bigint[])`;
        archived += rows.length;
      }
    }));
    return { messages: archived, wallMs: performance.now() - startedAt };
  } finally {
    await Promise.all(clients.map((sql) => sql.end()));
  }
}
