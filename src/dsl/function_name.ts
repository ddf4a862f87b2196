/**
 * The name of a worker function (the deployable unit, one Edge Function: its directory and URL
 * path). `deno task gen:functions` names the functions it writes with it, and a step worker's
 * `functionName` defaults to it, so both agree.
 *
 * Rule: lowercase each slug and turn `_` into `-`; a plain flow's function is the flow part
 * alone, a step function is `<flow>--<step>`. Slugs start with a letter, contain only
 * `[a-zA-Z0-9_]`, never contain `__` and never end with `_`, so a converted slug never contains
 * `--` and never starts or ends with `-`: the first `--` always separates flow from step. Two
 * different `(flow, step)` pairs therefore get different names unless their flow slugs differ only
 * in case, which sluice treats as one concrete flow anyway (the generator rejects such a module).
 *
 * @module
 */

function kebab(slug: string): string {
  return slug.toLowerCase().replaceAll("_", "-");
}

/**
 * The worker function name of a plain flow (no step) or of one step of a step-queued flow.
 *
 * @param flowSlug The concrete flow slug.
 * @param stepSlug The step slug, or `null` for a plain flow's single function.
 * @returns The function name: `[a-z][a-z0-9-]*`, as Supabase accepts it.
 *
 * @example Usage
 * ```ts
 * import { workerFunctionName } from "@sluice/sluice/admin";
 *
 * console.log(workerFunctionName("greet_user", null)); // "greet-user"
 * console.log(workerFunctionName("thread_digest", "fetch_posts")); // "thread-digest--fetch-posts"
 * ```
 */
export function workerFunctionName(flowSlug: string, stepSlug: string | null): string {
  return stepSlug === null ? kebab(flowSlug) : `${kebab(flowSlug)}--${kebab(stepSlug)}`;
}
