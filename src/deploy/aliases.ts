/**
 * Stable aliases: read them, read their history, and re-point one by compare-and-swap
 * (`activateAlias`); what an old version still holds (`getVersionDrain`).
 *
 * @module
 */

import {
  activateAliasRow,
  type AliasHistoryRow,
  type AliasRow,
  readAlias,
  readAliases,
  readAliasHistory,
  readVersionDrain,
  type VersionDrainRow,
} from "../db/alias_queries.ts";
import type { Queryable } from "../db/driver/postgres.ts";
import { AliasConflictError, AliasWorkersMissingError } from "./errors.ts";

/**
 * An alias: the concrete flow it starts runs on, and its generation (1 when created, + 1 per
 * activation).
 *
 * @example Usage
 * ```ts
 * import type { Alias } from "@sluice/sluice/admin";
 *
 * const alias: Alias = {
 *   alias: "orders",
 *   flowSlug: "orders_v2",
 *   generation: 2,
 *   activatedAt: new Date(),
 * };
 * ```
 */
export interface Alias {
  /** The caller-facing name. */
  readonly alias: string;
  /** The concrete flow it points at. */
  readonly flowSlug: string;
  /** The compare-and-swap counter: pass it as `expectedGeneration` to re-point the alias. */
  readonly generation: number;
  /** When it was last activated. */
  readonly activatedAt: Date;
}

/**
 * One activation of an alias, from its append-only history.
 *
 * @example Usage
 * ```ts
 * import type { AliasActivation } from "@sluice/sluice/admin";
 *
 * const entry: AliasActivation = {
 *   alias: "orders",
 *   flowSlug: "orders_v2",
 *   generation: 2,
 *   activatedAt: new Date(),
 *   previousFlowSlug: "orders",
 *   activatedBy: "postgres",
 *   forced: false,
 * };
 * ```
 */
export interface AliasActivation extends Alias {
  /** The flow it pointed at before (`null` when this activation created the alias). */
  readonly previousFlowSlug: string | null;
  /** Who activated it: the `activatedBy` given, else the database user. */
  readonly activatedBy: string;
  /** Whether the live-worker check was skipped. */
  readonly forced: boolean;
}

/**
 * Options of {@linkcode activateAlias}.
 *
 * @example Usage
 * ```ts
 * import type { ActivateAliasOptions } from "@sluice/sluice/admin";
 *
 * const options: ActivateAliasOptions = { expectedGeneration: 1, activatedBy: "deploy #42" };
 * ```
 */
export interface ActivateAliasOptions {
  /**
   * The generation the caller last read (`getAlias()`), or `0` to create a new alias. The
   * activation succeeds only if the alias is still at it.
   */
  readonly expectedGeneration: number;
  /**
   * Activate even when a step of the target has no live worker (its runs' tasks wait, durably,
   * until one starts).
   *
   * @default {false}
   */
  readonly force?: boolean;
  /**
   * Who activates, recorded in the history.
   *
   * @default {the database user}
   */
  readonly activatedBy?: string;
}

/**
 * What a concrete flow (typically an old version) still holds. `workDrained`: no active run and
 * no queued or started task, so its workers may stop. `drained`: that, no live worker and no
 * alias pointing at it, so it may be deleted.
 *
 * @example Usage
 * ```ts
 * import type { VersionDrain } from "@sluice/sluice/admin";
 *
 * const drain: VersionDrain = {
 *   flowSlug: "orders",
 *   aliases: [],
 *   selfAliasPointsAt: "orders_v2",
 *   activeRuns: 0,
 *   queuedTasks: 0,
 *   startedTasks: 0,
 *   liveWorkers: 0,
 *   workDrained: true,
 *   drained: true,
 * };
 * ```
 */
export interface VersionDrain {
  /** The concrete flow. */
  readonly flowSlug: string;
  /** Aliases other than its own name that point at it: new runs can still arrive through them. */
  readonly aliases: readonly string[];
  /** Where the alias named like the flow points (another version after an upgrade). */
  readonly selfAliasPointsAt: string | null;
  /** Runs not yet completed or failed. */
  readonly activeRuns: number;
  /** Tasks waiting for a worker. */
  readonly queuedTasks: number;
  /** Tasks a worker is running. */
  readonly startedTasks: number;
  /** Workers with a fresh heartbeat. */
  readonly liveWorkers: number;
  /** No active run and no queued or started task. */
  readonly workDrained: boolean;
  /** Work drained, no live worker and no alias. */
  readonly drained: boolean;
}

/**
 * Reads one alias.
 *
 * @param sql The database client (or a transaction).
 * @param alias The alias name.
 * @returns The alias, or `null` when there is none of that name.
 *
 * @example Usage
 * ```ts ignore
 * import { connect } from "@sluice/sluice";
 * import { getAlias } from "@sluice/sluice/admin";
 *
 * const sql = connect(Deno.env.get("DATABASE_URL")!);
 * console.log(await getAlias(sql, "orders")); // { alias: "orders", flowSlug: "orders", generation: 1, ... }
 * ```
 */
export async function getAlias(sql: Queryable, alias: string): Promise<Alias | null> {
  const row = await readAlias(sql, alias);
  return row === null ? null : toAlias(row);
}

/**
 * Lists every alias (each concrete flow has one named like itself), by name.
 *
 * @param sql The database client (or a transaction).
 * @returns The aliases.
 *
 * @example Usage
 * ```ts ignore
 * import { connect } from "@sluice/sluice";
 * import { listAliases } from "@sluice/sluice/admin";
 *
 * const sql = connect(Deno.env.get("DATABASE_URL")!);
 * for (const alias of await listAliases(sql)) console.log(alias.alias, "->", alias.flowSlug);
 * ```
 */
export async function listAliases(sql: Queryable): Promise<Alias[]> {
  return (await readAliases(sql)).map(toAlias);
}

/**
 * Reads an alias's activations, oldest first (empty when there is no such alias).
 *
 * @param sql The database client (or a transaction).
 * @param alias The alias name.
 * @returns Its history.
 *
 * @example Usage
 * ```ts ignore
 * import { connect } from "@sluice/sluice";
 * import { getAliasHistory } from "@sluice/sluice/admin";
 *
 * const sql = connect(Deno.env.get("DATABASE_URL")!);
 * for (const entry of await getAliasHistory(sql, "orders")) {
 *   console.log(entry.generation, entry.previousFlowSlug, "->", entry.flowSlug, entry.activatedBy);
 * }
 * ```
 */
export async function getAliasHistory(sql: Queryable, alias: string): Promise<AliasActivation[]> {
  return (await readAliasHistory(sql, alias)).map((row: AliasHistoryRow) => ({
    ...toAlias(row),
    previousFlowSlug: row.previous_flow_slug,
    activatedBy: row.activated_by,
    forced: row.forced,
  }));
}

/**
 * Points `alias` at the concrete flow `flowSlug` by compare-and-swap: only when the alias is
 * still at `expectedGeneration` (`0` creates it). Runs already started keep their flow; runs
 * started through the alias afterwards start on `flowSlug`. Activating the flow the alias already
 * points at, at its current generation, changes nothing.
 *
 * @param sql The database client (or a transaction).
 * @param alias The alias: a slug; it may be a flow's own name only to re-point that flow's
 * self-alias (the V1 -> V2 upgrade keeps callers' name).
 * @param flowSlug The concrete flow to activate; it must be compiled.
 * @param options The expected generation, `force`, and who activates.
 * @returns The alias's new generation.
 * @throws {AliasConflictError} When the alias is no longer at `expectedGeneration` (another
 * activation won); nothing changed. Read it again and decide; do not retry blindly.
 * @throws {AliasWorkersMissingError} When a step of `flowSlug` has no live worker and `force` is
 * not set; nothing changed.
 * @throws {RangeError} When `expectedGeneration` is not a whole number >= 0.
 * @throws {Error} From the database for an unknown flow or an alias that is not a slug or
 * differs only in case from another flow or alias.
 *
 * @example Usage
 * ```ts ignore
 * import { connect } from "@sluice/sluice";
 * import { activateAlias, getAlias } from "@sluice/sluice/admin";
 *
 * const sql = connect(Deno.env.get("DATABASE_URL")!);
 * const current = await getAlias(sql, "orders");
 * const generation = await activateAlias(sql, "orders", "orders_v2", {
 *   expectedGeneration: current?.generation ?? 0,
 * });
 * ```
 */
export async function activateAlias(
  sql: Queryable,
  alias: string,
  flowSlug: string,
  options: ActivateAliasOptions,
): Promise<number> {
  const expected = options?.expectedGeneration;
  if (typeof expected !== "number" || !Number.isSafeInteger(expected) || expected < 0) {
    throw new RangeError(
      `Cannot activate alias ${JSON.stringify(alias)}: expectedGeneration must be a whole ` +
        `number >= 0 (0 creates the alias), got ${String(expected)}`,
    );
  }
  try {
    return await activateAliasRow(sql, {
      alias,
      flowSlug,
      expectedGeneration: expected,
      force: options.force ?? false,
      activatedBy: options.activatedBy ?? null,
    });
  } catch (error) {
    throw aliasError(error, alias, flowSlug, expected) ?? error;
  }
}

/**
 * Reads what the concrete flow `flowSlug` still holds: active runs, queued and started tasks,
 * live workers and the aliases that point at it.
 *
 * @param sql The database client (or a transaction).
 * @param flowSlug The concrete flow slug (typically an old version).
 * @returns Its drain state, or `null` when there is no such flow.
 *
 * @example Usage
 * ```ts ignore
 * import { connect } from "@sluice/sluice";
 * import { getVersionDrain } from "@sluice/sluice/admin";
 *
 * const sql = connect(Deno.env.get("DATABASE_URL")!);
 * const drain = await getVersionDrain(sql, "orders");
 * if (drain?.workDrained) console.log("orders has no work left: stop its workers");
 * ```
 */
export async function getVersionDrain(
  sql: Queryable,
  flowSlug: string,
): Promise<VersionDrain | null> {
  const row = await readVersionDrain(sql, flowSlug);
  return row === null ? null : toVersionDrain(row);
}

function toAlias(row: AliasRow): Alias {
  return {
    alias: row.alias,
    flowSlug: row.flow_slug,
    generation: row.generation,
    activatedAt: row.activated_at,
  };
}

function toVersionDrain(row: VersionDrainRow): VersionDrain {
  return {
    flowSlug: row.flow_slug,
    aliases: row.aliases,
    selfAliasPointsAt: row.self_alias_points_at,
    activeRuns: row.active_runs,
    queuedTasks: row.queued_tasks,
    startedTasks: row.started_tasks,
    liveWorkers: row.live_workers,
    workDrained: row.work_drained,
    drained: row.drained,
  };
}

/** The typed error for SQLSTATE SLA01 / SLA02 of `sluice.activate_alias`, else `undefined`. */
function aliasError(
  error: unknown,
  alias: string,
  flowSlug: string,
  expected: number,
): Error | undefined {
  const { code, detail, message } = error as {
    code?: unknown;
    detail?: unknown;
    message?: unknown;
  };
  if (typeof detail !== "string" || typeof message !== "string") return undefined;
  if (code === "SLA01") {
    const current = JSON.parse(detail) as { generation: number; flow_slug: string | null };
    return new AliasConflictError(message, {
      alias,
      flowSlug,
      expectedGeneration: expected,
      actualGeneration: current.generation,
      actualFlowSlug: current.flow_slug,
    });
  }
  if (code === "SLA02") {
    const routes = JSON.parse(detail) as { step_slug: string; queue_name: string }[];
    return new AliasWorkersMissingError(message, {
      alias,
      flowSlug,
      missingRoutes: routes.map((route) => ({
        stepSlug: route.step_slug,
        queueName: route.queue_name,
      })),
    });
  }
  return undefined;
}
