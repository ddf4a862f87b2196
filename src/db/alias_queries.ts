/**
 * Every SQL statement about aliases and versions: reading aliases and their history, the
 * compare-and-swap activation (`sluice.activate_alias`) and what a version still holds
 * (`sluice.version_drain`).
 *
 * @module
 */

import type { Queryable } from "./driver/postgres.ts";

/** A row of `sluice.aliases`. */
export interface AliasRow {
  readonly alias: string;
  readonly flow_slug: string;
  readonly generation: number;
  readonly activated_at: Date;
}

/** A row of `sluice.alias_history`. */
export interface AliasHistoryRow extends AliasRow {
  readonly previous_flow_slug: string | null;
  readonly activated_by: string;
  readonly forced: boolean;
}

/** A row of `sluice.version_drain`. */
export interface VersionDrainRow {
  readonly flow_slug: string;
  readonly aliases: readonly string[];
  readonly self_alias_points_at: string | null;
  readonly active_runs: number;
  readonly queued_tasks: number;
  readonly started_tasks: number;
  readonly live_workers: number;
  readonly work_drained: boolean;
  readonly drained: boolean;
}

/** One alias, or `null` when there is none of that name. */
export async function readAlias(sql: Queryable, alias: string): Promise<AliasRow | null> {
  const rows = await sql<AliasRow[]>`
    select a.alias, a.flow_slug, a.generation::integer as generation, a.activated_at
    from sluice.aliases a where a.alias = ${alias}`;
  return rows[0] ?? null;
}

/** A row of `sluice.aliases` with how it came to be. */
export interface AliasListingRow extends AliasRow {
  /**
   * `self`: a flow's own name, pointing at it; `re-pointed`: a flow's own name (compilation
   * created it) now pointing at another flow; `alias`: a name created by an activation.
   */
  readonly kind: "self" | "re-pointed" | "alias";
}

/** Every alias, by name, with its kind. */
export async function readAliases(sql: Queryable): Promise<AliasListingRow[]> {
  return await sql<AliasListingRow[]>`
    select a.alias, a.flow_slug, a.generation::integer as generation, a.activated_at,
      case
        when a.alias = a.flow_slug then 'self'
        when exists (
          select 1 from sluice.alias_history h where h.alias = a.alias and h.flow_slug = a.alias
        ) then 're-pointed'
        else 'alias'
      end as kind
    from sluice.aliases a
    order by a.alias collate "C"`;
}

/** An alias's activations, oldest first. */
export async function readAliasHistory(sql: Queryable, alias: string): Promise<AliasHistoryRow[]> {
  return await sql<AliasHistoryRow[]>`
    select h.alias, h.flow_slug, h.generation::integer as generation, h.activated_at,
      h.previous_flow_slug, h.activated_by, h.forced
    from sluice.alias_history h where h.alias = ${alias} order by h.generation`;
}

/** `sluice.activate_alias`: the new generation, or the database's error (SQLSTATE SLA01/SLA02). */
export async function activateAliasRow(sql: Queryable, activation: {
  readonly alias: string;
  readonly flowSlug: string;
  readonly expectedGeneration: number;
  readonly force: boolean;
  readonly activatedBy: string | null;
}): Promise<number> {
  const [{ generation }] = await sql<{ generation: number }[]>`
    select sluice.activate_alias(${activation.alias}, ${activation.flowSlug},
      ${activation.expectedGeneration}::bigint, ${activation.force},
      ${activation.activatedBy})::integer as generation`;
  return generation;
}

/** What the flow `flowSlug` still holds, or `null` when there is no such flow. */
export async function readVersionDrain(
  sql: Queryable,
  flowSlug: string,
): Promise<VersionDrainRow | null> {
  // Waits for the transactions still starting runs of the flow (sluice.create_run holds the
  // flow's start lock shared until it commits), so the counts below include their runs.
  await sql`select pg_advisory_xact_lock(hashtextextended('sluice.starts:' || lower(${flowSlug}), 0))`;
  const rows = await sql<VersionDrainRow[]>`
    select v.flow_slug, v.aliases, v.self_alias_points_at, v.active_runs, v.queued_tasks,
      v.started_tasks, v.live_workers, v.work_drained, v.drained
    from sluice.version_drain v where v.flow_slug = ${flowSlug}`;
  return rows[0] ?? null;
}

/**
 * The latest generation at which `flowSlug` was replaced on `alias` (the history records it as
 * the previous flow), or `null` when the alias was never moved away from it.
 */
export async function readReplacedGeneration(
  sql: Queryable,
  alias: string,
  flowSlug: string,
): Promise<number | null> {
  const [replaced] = await sql<{ generation: string }[]>`
    select max(h.generation)::text as generation from sluice.alias_history h
    where h.alias = ${alias} and h.previous_flow_slug = ${flowSlug}
    having max(h.generation) is not null`;
  return replaced === undefined ? null : Number(replaced.generation);
}
