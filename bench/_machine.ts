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

/** Summed user + system CPU time of processes from /proc, or `undefined` if one is gone. */
export async function processCpuMs(pids: (number | "self")[]): Promise<number | undefined> {
  let ticks = 0;
  for (const pid of pids) {
    let stat: string;
    try {
      stat = await Deno.readTextFile(`/proc/${pid}/stat`);
    } catch {
      return undefined;
    }
    // Fields after the parenthesized command name; utime and stime are fields 14 and 15.
    const fields = stat.slice(stat.lastIndexOf(")") + 2).split(" ");
    ticks += Number(fields[11]) + Number(fields[12]);
  }
  // Linux reports these in USER_HZ, which is 100 on every mainstream architecture.
  return ticks * 10;
}
