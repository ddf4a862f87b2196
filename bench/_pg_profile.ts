/**
 * Server-side profile of a benchmark: `pg_stat_statements` with nested statements (the ones inside
 * PL/pgSQL functions) and planning time, plus `pg_stat_user_functions`. Only for a throwaway
 * cluster, whose settings the benchmark controls.
 *
 * @module
 */
import type { Sql } from "postgres";
import { markdownTable } from "./_stats.ts";

/** Server settings that make the statistics below available. */
export const PROFILE_SETTINGS: Record<string, string> = {
  shared_preload_libraries: "pg_stat_statements",
  "pg_stat_statements.track": "all",
  "pg_stat_statements.track_planning": "on",
  track_functions: "all",
};

/** Clears statement and function statistics of the current database. */
export async function resetProfile(sql: Sql): Promise<void> {
  await sql`create extension if not exists pg_stat_statements`;
  await sql`select pg_stat_statements_reset()`;
  await sql`select pg_stat_reset()`;
}

/**
 * Reports where server time went since {@linkcode resetProfile}: top-level calls, the nested
 * statements with the most time, and PL/pgSQL functions by self time. Call it after the measured
 * sessions ended: backends flush function statistics when they exit.
 */
export async function profileReport(sql: Sql, limit = 15): Promise<string> {
  // Function statistics reach the shared view when a backend flushes them; give the exiting
  // sessions a moment.
  await new Promise((resolve) => setTimeout(resolve, 1500));
  const statements = await sql<
    { toplevel: boolean; calls: string; exec: number; plan: number; rows: string; query: string }[]
  >`
    select toplevel, calls::text, total_exec_time as exec, total_plan_time as plan, rows::text,
      regexp_replace(query, '\\s+', ' ', 'g') as query
    from pg_stat_statements
    where dbid = (select oid from pg_database where datname = current_database())
      and query not like '%pg_stat_statements%'
    order by total_exec_time + total_plan_time desc
  `;
  const row = (s: (typeof statements)[number]) => [
    s.calls,
    (s.exec + s.plan).toFixed(0),
    s.plan.toFixed(0),
    ((s.exec + s.plan) / Number(s.calls)).toFixed(3),
    s.rows,
    `\`${s.query.slice(0, 110).replaceAll("|", "\\|")}\``,
  ];
  const header = ["calls", "total ms", "of it plan ms", "mean ms", "rows", "statement"];
  const functions = await sql<
    { name: string; calls: string; total: number; self: number }[]
  >`
    select schemaname || '.' || funcname as name, calls::text, total_time as total,
      self_time as self
    from pg_stat_user_functions
    order by self_time desc
    limit ${limit}
  `;
  return [
    "Top-level statements (client calls):",
    "",
    markdownTable(header, statements.filter((s) => s.toplevel).slice(0, limit).map(row)),
    "",
    "Nested statements (inside functions), by total time:",
    "",
    markdownTable(header, statements.filter((s) => !s.toplevel).slice(0, limit).map(row)),
    "",
    "PL/pgSQL and SQL functions, by self time:",
    "",
    markdownTable(
      ["function", "calls", "total ms", "self ms", "self ms per call"],
      functions.map((f) => [
        f.name,
        f.calls,
        f.total.toFixed(0),
        f.self.toFixed(0),
        (f.self / Number(f.calls)).toFixed(3),
      ]),
    ),
  ].join("\n");
}
