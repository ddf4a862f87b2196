/**
 * The loop behind `compileFlow()` (src/client/) and every worker's startup (src/worker/), which
 * also answers the flow's compile generation the worker registers with: in src/deploy/, which
 * both may import, so that the worker never imports the producer API.
 *
 * @module
 */

import type { Sql } from "../db/driver/postgres.ts";
import { ensureFlowCompiled } from "../db/compile_queries.ts";
import { extractDefinition } from "../dsl/definition.ts";
import type { DeployableFlow } from "../dsl/types.ts";
import type { CompileFlowOptions, CompileResult } from "./compile_types.ts";
import { FlowShapeMismatchError, RecompileInFlightError } from "./errors.ts";
import { notInstalledError } from "./not_installed.ts";

/**
 * {@linkcode compileFlow}, also answering the flow's compile generation, which a worker registers
 * with: once the flow is compiled again (a development recompile) the worker is fenced.
 */
export async function compileFlowGeneration(
  sql: Sql,
  flow: DeployableFlow,
  options: CompileFlowOptions = {},
): Promise<CompileResult & { readonly generation: number }> {
  const environment = options.environment ?? "production";
  if (environment !== "production" && environment !== "development") {
    throw new TypeError(
      `Cannot compile flow: environment must be "production" or "development", got ${
        JSON.stringify(environment)
      }`,
    );
  }
  const drainTimeoutMs = nonNegative(options.drainTimeoutMs ?? 60_000, "drainTimeoutMs");
  const pollMs = nonNegative(options.drainPollIntervalMs ?? 500, "drainPollIntervalMs");
  const definition = extractDefinition(flow);
  const body = JSON.stringify(definition);
  const deadline = Date.now() + drainTimeoutMs;

  for (;;) {
    const result = await ensureFlowCompiled(sql, body, environment).catch((error: unknown) => {
      throw notInstalledError(error, `Cannot compile flow ${JSON.stringify(definition.flow_slug)}`);
    });
    switch (result.outcome) {
      case "compiled":
      case "verified":
      case "recompiled":
        return {
          outcome: result.outcome,
          differences: Object.freeze([...result.differences]),
          ...(result.outcome === "recompiled"
            ? { deletedRuns: Object.freeze({ ...result.deleted_runs }) }
            : {}),
          generation: result.generation!,
        };
      case "in_flight":
        // Old workers keep serving the runs: wait for them to finish, as for a drain, unless
        // nothing will finish them soon (a step waits on a signal or a sleep, or no worker is
        // live), which is said at once.
        if (
          (result.waiting_steps ?? 0) === 0 && (result.live_workers ?? 0) > 0 &&
          Date.now() < deadline
        ) {
          await new Promise((resolve) =>
            setTimeout(resolve, Math.min(pollMs, deadline - Date.now()))
          );
          break;
        }
        throw new RecompileInFlightError(
          definition.flow_slug,
          result.in_flight_runs ?? 0,
          result.waiting_steps ?? 0,
          (result.waiting ?? []).map((w) => ({
            runId: w.run_id,
            stepSlug: w.step_slug,
            waitKey: w.wait_key,
            waitUntil: w.wait_until,
          })),
          result.differences,
        );
      case "mismatch":
        throw new FlowShapeMismatchError(definition.flow_slug, result.differences);
      case "draining":
        if (Date.now() >= deadline) {
          throw new Error(
            `Cannot recompile flow ${JSON.stringify(definition.flow_slug)}: ${
              result.live_workers ?? "some"
            } live worker(s) did not stop within ${drainTimeoutMs} ms after being deprecated; ` +
              `stop them (or wait for their heartbeats to expire) and start again`,
          );
        }
        await new Promise((resolve) =>
          setTimeout(resolve, Math.min(pollMs, deadline - Date.now()))
        );
        break;
      default:
        throw new Error(
          `Cannot compile flow ${JSON.stringify(definition.flow_slug)}: unexpected outcome ${
            JSON.stringify(result.outcome)
          } from sluice.ensure_flow_compiled`,
        );
    }
  }
}

function nonNegative(value: number, name: string): number {
  if (typeof value !== "number" || !Number.isFinite(value) || value < 0) {
    throw new RangeError(
      `Cannot compile flow: ${name} must be a finite number >= 0, got ${String(value)}`,
    );
  }
  return value;
}
