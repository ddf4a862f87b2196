/**
 * What else the machine is doing while a benchmark runs: the build machines have 2 cores shared
 * with other jobs, so every report states the load next to its figures.
 *
 * @module
 */

/**
 * The 1, 5 and 15 minute load averages from `/proc/loadavg`, or `? ? ?` where there is none.
 *
 * @example
 * ```ts ignore
 * import { loadAverage } from "./_machine.ts";
 * console.log(await loadAverage()); // 1.52 1.20 0.98
 * ```
 */
export async function loadAverage(): Promise<string> {
  const text = await Deno.readTextFile("/proc/loadavg").catch(() => "? ? ?");
  return text.split(" ").slice(0, 3).join(" ");
}
