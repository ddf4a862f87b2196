/**
 * Whether `pid` is a live postmaster of `dataDir`. A zombie no longer serves anything, and a pid
 * reused by another process does not count.
 */
export async function isPostmasterOf(pid: number, dataDir: string): Promise<boolean> {
  try {
    const stat = await Deno.readTextFile(`/proc/${pid}/stat`);
    const state = stat.slice(stat.lastIndexOf(")") + 2, stat.lastIndexOf(")") + 3);
    const cmdline = (await Deno.readTextFile(`/proc/${pid}/cmdline`)).split("\0");
    return state !== "Z" && cmdline.includes(dataDir);
  } catch (error) {
    if (error instanceof Deno.errors.NotFound) return false;
    throw error;
  }
}

/** Whether anything exists at `path`. */
export async function exists(path: string): Promise<boolean> {
  try {
    await Deno.lstat(path);
    return true;
  } catch (error) {
    if (error instanceof Deno.errors.NotFound) return false;
    throw error;
  }
}

/** Polls `condition` every 100 ms until it holds or `timeoutMs` passed; returns the last result. */
export async function eventually(
  condition: () => Promise<boolean>,
  timeoutMs: number,
): Promise<boolean> {
  const deadline = Date.now() + timeoutMs;
  while (!(await condition())) {
    if (Date.now() > deadline) return false;
    await new Promise((resolve) => setTimeout(resolve, 100));
  }
  return true;
}
