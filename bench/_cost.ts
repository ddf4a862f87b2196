/**
 * Server cost of a measured stretch of work, independent of how loaded the machine is: WAL bytes
 * (`pg_current_wal_lsn()`), shared buffer accesses and statements (`pg_stat_statements`, client
 * calls and the nested statements inside functions), rows updated (`pg_stat_user_tables`). Take a
 * {@linkcode costMark} before the work (it resets the statement statistics) and pass it to
 * {@linkcode costSince} after the sessions that did the work have ended (backends flush their
 * table statistics when they exit). Needs the profile settings of `_pg_profile.ts`.
 *
 * @module
 */
import type { Sql } from "postgres";

/** What {@linkcode costMark} recorded: the WAL position and the table counters. */
export interface CostMark {
  /** WAL insert position when the mark was taken. */
  lsn: string;
  /** Rows updated in sluice and PGMQ tables so far. */
  updated: number;
  /** Of them, heap-only (HOT) updates. */
  hotUpdated: number;
  /** Full-page images written so far (a checkpoint during the work inflates WAL with them). */
  fpi: number;
}

/** Server work done since a {@linkcode CostMark}, in total (divide by the tasks yourself). */
export interface Cost {
  /** WAL bytes written. */
  walBytes: number;
  /** Full-page images among them. */
  fpi: number;
  /** Shared buffer hits + reads of client statements (their nested statements included). */
  bufferAccesses: number;
  /** Client (top-level) statements. */
  clientStatements: number;
  /** Statements run inside functions. */
  nestedStatements: number;
  /** Plans made (client and nested statements; `pg_stat_statements.track_planning`). */
  plans: number;
  /** Rows updated in sluice and PGMQ tables. */
  rowsUpdated: number;
  /** Of them, heap-only (HOT) updates. */
  hotUpdated: number;
  /** Nested statements by text, most called first: where `nestedStatements` comes from. */
  topNested: { calls: number; query: string }[];
}

/** The schemas whose tables' updates are counted unless a caller names others. */
const SLUICE_SCHEMAS = ["sluice", "pgmq"];

/** The statements the measurement itself sends, left out of the counts. */
const OWN_STATEMENTS =
  /pg_stat|pg_current_wal_lsn|stop_worker|register_worker|track_worker_function|pg_backend_pid/;

async function tables(
  sql: Sql,
  schemas: string[],
): Promise<{ updated: number; hotUpdated: number; fpi: number }> {
  const [row] = await sql<{ updated: string; hot: string; fpi: string }[]>`
    select coalesce(sum(n_tup_upd), 0)::text as updated,
      coalesce(sum(n_tup_hot_upd), 0)::text as hot,
      (select wal_fpi::text from pg_stat_wal) as fpi
    from pg_stat_user_tables
    where schemaname = any (${schemas}::text[])
  `;
  return { updated: Number(row.updated), hotUpdated: Number(row.hot), fpi: Number(row.fpi) };
}

/**
 * Resets the statement statistics and records the WAL position and the counters of the tables in
 * `schemas` (sluice's and PGMQ's unless given: another engine's for a side-by-side benchmark).
 */
export async function costMark(sql: Sql, schemas = SLUICE_SCHEMAS): Promise<CostMark> {
  await sql`create extension if not exists pg_stat_statements`;
  await sql`select pg_stat_statements_reset()`;
  const counters = await tables(sql, schemas);
  const [{ lsn }] = await sql<{ lsn: string }[]>`select pg_current_wal_lsn()::text as lsn`;
  return { lsn, ...counters };
}

/**
 * Work since `mark`. Call it once the measured sessions have ended: table statistics reach the
 * shared view when a backend flushes them, which it does at exit.
 */
export async function costSince(
  sql: Sql,
  mark: CostMark,
  schemas = SLUICE_SCHEMAS,
): Promise<Cost> {
  const [{ wal }] = await sql<{ wal: string }[]>`
    select pg_wal_lsn_diff(pg_current_wal_lsn(), ${mark.lsn}::pg_lsn)::text as wal
  `;
  // A moment for the ended sessions' statistics to arrive.
  await new Promise((resolve) => setTimeout(resolve, 1000));
  const counters = await tables(sql, schemas);
  const statements = await sql<
    { toplevel: boolean; calls: string; plans: string; buffers: string; query: string }[]
  >`
    select toplevel, calls::text, plans::text,
      (shared_blks_hit + shared_blks_read)::text as buffers,
      regexp_replace(query, '\\s+', ' ', 'g') as query
    from pg_stat_statements
    where dbid = (select oid from pg_database where datname = current_database())
  `;
  const counted = statements.filter((s) => !OWN_STATEMENTS.test(s.query));
  const sum = (rows: typeof counted, field: "calls" | "plans" | "buffers") =>
    rows.reduce((total, s) => total + Number(s[field]), 0);
  const client = counted.filter((s) => s.toplevel);
  const nested = counted.filter((s) => !s.toplevel);
  return {
    walBytes: Number(wal),
    fpi: counters.fpi - mark.fpi,
    bufferAccesses: sum(client, "buffers"),
    clientStatements: sum(client, "calls"),
    nestedStatements: sum(nested, "calls"),
    plans: sum(counted, "plans"),
    rowsUpdated: counters.updated - mark.updated,
    hotUpdated: counters.hotUpdated - mark.hotUpdated,
    topNested: nested
      .map((s) => ({ calls: Number(s.calls), query: s.query }))
      .sort((a, b) => b.calls - a.calls)
      .slice(0, 12),
  };
}
