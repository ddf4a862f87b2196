// Waiting for a condition with live progress, shared by `fence drain`, `fence restore` and
// `version-drain --wait`.

import {
  type CommandArgs,
  type OpsIo,
  type OptionSpec,
  optionString,
  parseDuration,
  sleep,
} from "./command_types.ts";

/** How often a wait checks its condition unless told otherwise. */
const POLL_MS = 500;
/** An unchanged progress line is repeated this often, so a long wait visibly stays alive. */
const REPEAT_MS = 10_000;

/** One look at the condition: whether it holds, and a progress line describing the state. */
export interface WaitCheck {
  readonly done: boolean;
  readonly progress: string;
}

/**
 * Checks every `intervalMs` until the condition holds or `timeoutMs` has passed, printing the
 * progress line each time it changes (and every 10 s when it does not). Returns whether the
 * condition held.
 */
export async function waitWithProgress(
  io: OpsIo,
  timeoutMs: number,
  check: () => Promise<WaitCheck>,
  intervalMs: number = POLL_MS,
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
    await sleep(Math.min(intervalMs, Math.max(0, timeoutMs - elapsed)));
  }
}

/** `--timeout DURATION` of a command that waits, with its default. */
export function timeoutOption(fallback: string): OptionSpec {
  return {
    name: "timeout",
    value: "DURATION",
    summary: `give up after this long (90s, 5m, 1h; default ${fallback}) and exit 1`,
  };
}

/** The `--timeout` in milliseconds. */
export function timeoutMs(args: CommandArgs, fallback: string): number {
  return parseDuration("timeout", optionString(args, "timeout", fallback));
}
