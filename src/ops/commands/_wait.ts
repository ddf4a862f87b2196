// Waiting for a condition with live progress, shared by `fence drain` and `fence restore`.

import { type OpsIo, sleep } from "./_command.ts";

/** How often a wait checks its condition. */
const POLL_MS = 500;
/** An unchanged progress line is repeated this often, so a long wait visibly stays alive. */
const REPEAT_MS = 10_000;

/** One look at the condition: whether it holds, and a progress line describing the state. */
export interface WaitCheck {
  readonly done: boolean;
  readonly progress: string;
}

/**
 * Checks until the condition holds or `timeoutMs` has passed, printing the progress line each
 * time it changes (and every 10 s when it does not). Returns whether the condition held.
 */
export async function waitWithProgress(
  io: OpsIo,
  timeoutMs: number,
  check: () => Promise<WaitCheck>,
): Promise<boolean> {
  const started = Date.now();
  let printed = "";
  let printedAt = 0;
  for (;;) {
    const { done, progress } = await check();
    if (done) return true;
    const elapsed = Date.now() - started;
    if (progress !== printed || Date.now() - printedAt >= REPEAT_MS) {
      io.out(`[${Math.round(elapsed / 1000)}s] ${progress}`);
      printed = progress;
      printedAt = Date.now();
    }
    if (elapsed >= timeoutMs) return false;
    await sleep(Math.min(POLL_MS, Math.max(0, timeoutMs - elapsed)));
  }
}
