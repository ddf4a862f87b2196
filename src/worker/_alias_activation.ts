/**
 * A deployed flow's worker activating its alias at startup (`activate: "on-startup"`): one
 * compare-and-swap from the generation it read, never retried. It only creates the alias or moves
 * it to a flow the alias has never been moved away from: a flow that appears in the alias's
 * history as replaced (by a newer version's worker or by an operator's rollback) is `superseded`,
 * so an old version's respawn never moves the alias back; an operator's explicit activation still
 * can. Losing the race or meeting a step
 * without a live worker is an expected outcome while versions roll out, reported and logged;
 * any other failure is logged as an error and the worker keeps serving its concrete flow, whose
 * work does not depend on where the alias points.
 *
 * @module
 */

import { activateAlias, getAlias } from "../deploy/aliases.ts";
import { AliasConflictError, AliasWorkersMissingError } from "../deploy/errors.ts";
import { readReplacedGeneration } from "../db/alias_queries.ts";
import type { Queryable } from "../db/driver/postgres.ts";
import { describeError } from "./describe_error.ts";
import type { Logger } from "./logger.ts";
import type { AliasActivationResult } from "./worker_options.ts";

/** Who is recorded in the alias history, and what is activated. */
export interface StartupActivation {
  readonly alias: string;
  readonly flowSlug: string;
  readonly workerId: string;
  readonly functionName: string;
}

/** Points `alias` at `flowSlug` unless it already does; reports what happened. */
export async function activateOnStartup(
  sql: Queryable,
  logger: Logger,
  target: StartupActivation,
): Promise<AliasActivationResult> {
  const { alias, flowSlug } = target;
  let expected = 0;
  try {
    const current = await getAlias(sql, alias);
    if (current?.flowSlug === flowSlug) {
      return { alias, outcome: "already_active", generation: current.generation };
    }
    expected = current?.generation ?? 0;
    // Read after the alias: a replacement recorded later moved the generation on, and the
    // compare-and-swap below then loses.
    const replaced = await readReplacedGeneration(sql, alias, flowSlug);
    if (replaced !== null) {
      logger.warn("alias not activated: this flow was replaced on the alias before (superseded)", {
        alias,
        flow_slug: flowSlug,
        current_flow_slug: current?.flowSlug ?? null,
        generation: expected,
        replaced_at_generation: replaced,
      });
      return { alias, outcome: "superseded", generation: expected };
    }
    const generation = await activateAlias(sql, alias, flowSlug, {
      expectedGeneration: expected,
      activatedBy: `worker ${target.workerId} (${target.functionName})`,
    });
    logger.info("alias activated", {
      alias,
      flow_slug: flowSlug,
      previous_flow_slug: current?.flowSlug ?? null,
      generation,
    });
    return { alias, outcome: "activated", generation };
  } catch (error) {
    if (error instanceof AliasConflictError) {
      logger.warn("alias not activated: another activation changed it first (not retried)", {
        alias,
        flow_slug: flowSlug,
        expected_generation: error.expectedGeneration,
        actual_generation: error.actualGeneration,
        actual_flow_slug: error.actualFlowSlug,
      });
      return { alias, outcome: "conflict", generation: error.actualGeneration };
    }
    if (error instanceof AliasWorkersMissingError) {
      logger.info("alias not activated yet: a step has no live worker (its worker activates)", {
        alias,
        flow_slug: flowSlug,
        generation: expected,
        missing_steps: error.missingRoutes.map((route) => route.stepSlug),
      });
      return { alias, outcome: "workers_missing", generation: expected };
    }
    logger.error("alias not activated; the worker keeps serving its flow", {
      alias,
      flow_slug: flowSlug,
      error: describeError(error),
    });
    return { alias, outcome: "failed", generation: null };
  }
}
