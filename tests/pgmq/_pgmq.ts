// Helpers shared by the PGMQ conformance tests in this folder.
import type postgres from "postgres";

/** The postgres.js client type the harness hands out. */
export type Sql = postgres.Sql;

/** The backend process id serving a single-connection client. */
export async function backendPid(sql: Sql): Promise<number> {
  const [row] = await sql<{ pid: number }[]>`select pg_backend_pid() as pid`;
  return row.pid;
}

/**
 * Resolves once backend `pid` waits for a lock held by another transaction, so a test can prove a
 * statement blocks (rather than skipping or failing) without guessing a sleep duration.
 */
export async function waitUntilBlocked(sql: Sql, pid: number, timeoutMs = 5000): Promise<void> {
  const deadline = Date.now() + timeoutMs;
  while (Date.now() < deadline) {
    const [row] = await sql<{ waiting: boolean }[]>`
      select coalesce(wait_event_type = 'Lock', false) as waiting
      from pg_stat_activity where pid = ${pid}
    `;
    if (row?.waiting) return;
    await sql`select pg_sleep(0.02)`;
  }
  throw new Error(`Cannot observe a lock wait: backend ${pid} never waited within ${timeoutMs} ms`);
}

/**
 * A `jsonb[]` query parameter (cast it with `::jsonb[]`): postgres.js types plain objects out of
 * template parameters, so each element travels as JSON text.
 */
export function jsonbArray(sql: Sql, values: readonly unknown[]) {
  return sql.array(values.map((value) => JSON.stringify(value)));
}
