/**
 * The parameters of the waits a completing step starts: the worker that completes a wait's one
 * dependency calls the wait's function with that dependency's output (docs/waits.md) and sends
 * the result with the completion, so the wait needs no worker of its own. A subflow's parameter
 * is its child input (docs/subflows.md).
 *
 * @module
 */

import type { StepDefinition } from "../dsl/step_definition.ts";
import type { WaitParameter } from "../db/worker_queries.ts";
import { findJsonProblem } from "../dsl/json_text.ts";
import { JsonValueError } from "../dsl/errors.ts";

/** The wait steps of a flow, keyed by the one step each depends on. */
export function waitStepsByDependency(
  steps: readonly StepDefinition[],
): ReadonlyMap<string, readonly StepDefinition[]> {
  const byDependency = new Map<string, StepDefinition[]>();
  for (const step of steps) {
    if (step.wait === null) continue;
    const dependency = step.dependsOn[0];
    byDependency.set(dependency, [...(byDependency.get(dependency) ?? []), step]);
  }
  return byDependency;
}

/**
 * Computes the key, due time or child input of each wait in `waits` from the output of `stepSlug` (as JSON
 * text, so the function sees what the database stores). Throws what a function throws, and a
 * `TypeError` naming the step for a result of the wrong kind.
 */
export function computeWaitParameters(
  stepSlug: string,
  outputJson: string,
  waits: readonly StepDefinition[],
): WaitParameter[] {
  if (waits.length === 0) return [];
  const deps = { [stepSlug]: JSON.parse(outputJson) } as never;
  return waits.map((step) => {
    const wait = step.wait!;
    if (wait.kind === "subflow") {
      const input: unknown = wait.input(deps);
      if (wait.map && !Array.isArray(input)) {
        throw new TypeError(
          `The input function of map subflow step ${
            JSON.stringify(step.slug)
          } must return an array of child inputs, got ${input === null ? "null" : typeof input}`,
        );
      }
      const problem = findJsonProblem(input, "input");
      if (problem !== undefined) {
        throw new JsonValueError(
          `Cannot start the child of subflow step ${JSON.stringify(step.slug)}`,
          problem.path,
          problem.detail,
        );
      }
      // The size limit is the child flow's, checked in SQL where the child starts.
      return { step_slug: step.slug, inputJson: JSON.stringify(input) };
    }
    if (wait.kind === "signal") {
      const key: unknown = wait.key(deps);
      if (typeof key !== "string" || key.length === 0 || key.length > 1000) {
        throw new TypeError(
          `The key function of wait step ${
            JSON.stringify(step.slug)
          } must return a string of 1 to 1000 characters, got ${
            typeof key === "string" ? `${key.length} characters` : typeof key
          }`,
        );
      }
      return { step_slug: step.slug, key };
    }
    const due: unknown = wait.due(deps);
    if (due instanceof Date && !Number.isNaN(due.getTime())) {
      return { step_slug: step.slug, until: due.toISOString() };
    }
    const seconds = typeof due === "object" && due !== null
      ? (due as { seconds?: unknown }).seconds
      : undefined;
    if (
      typeof seconds !== "number" || !Number.isInteger(seconds) || seconds < 0 ||
      seconds > 2_147_483_647
    ) {
      throw new TypeError(
        `The due-time function of sleep step ${
          JSON.stringify(step.slug)
        } must return a valid Date or { seconds } (a whole number from 0), got ${
          due instanceof Date ? "an invalid Date" : JSON.stringify(due) ?? typeof due
        }`,
      );
    }
    return { step_slug: step.slug, seconds };
  });
}
