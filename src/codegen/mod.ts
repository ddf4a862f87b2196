/**
 * Code generation for Supabase Edge Functions (`sluice functions generate`): one worker function per
 * step of every step-queued flow and one per plain flow, each an entrypoint calling `serveWorker`,
 * with its `deno.json`, the `[functions.<name>]` config and a manifest.
 *
 * @example Usage
 * ```ts ignore
 * import { generateFunctions } from "./mod.ts";
 *
 * const result = await generateFunctions({ configPath: "./deno.json", check: true });
 * for (const file of result.files) console.log(file.status, file.path);
 * ```
 *
 * @module
 */

export * from "./config.ts";
export * from "./errors.ts";
export * from "./generate.ts";
export * from "./plan.ts";
export { UnsafePathError, type UnsafePathReason } from "./project_files.ts";
export * from "./render.ts";
