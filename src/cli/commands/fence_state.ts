// The fence's state file: the `enabled` values of the affected worker functions as `fence record`
// found them, which `fence disable`, `fence drain` and `fence restore` read back.

import type { ManifestChange } from "./manifest.ts";

/** Where the fence commands keep their state unless `--state` says otherwise. */
export const DEFAULT_STATE_FILE = "sluice.fence.json";

/** One worker function of the affected set. */
export interface FencedFunction {
  readonly function_name: string;
  /** Its `enabled` value when recorded (an untracked function counts as enabled). */
  readonly enabled: boolean;
  /** Whether it had a row in `sluice.worker_functions` when recorded. */
  readonly tracked: boolean;
  /** Whether the new manifest has it (a removed function gets no new worker). */
  readonly deployed: boolean;
  /** How it differs between the old and the new manifest (`unchanged` without an old one). */
  readonly change: ManifestChange;
}

/** The content of a state file. */
export interface FenceState {
  readonly recorded_at: string;
  readonly manifest: string;
  readonly old_manifest: string | null;
  readonly functions: readonly FencedFunction[];
}

/** A state file that is missing, unreadable, or would overwrite an earlier record. */
export class FenceStateError extends Error {
  override name = "FenceStateError";
  /** The state file's path. */
  readonly path: string;

  constructor(path: string, message: string) {
    super(message);
    this.path = path;
  }
}

/** Reads the state `fence record` wrote. */
export async function readFenceState(path: string): Promise<FenceState> {
  let text: string;
  try {
    text = await Deno.readTextFile(path);
  } catch (error) {
    if (!(error instanceof Deno.errors.NotFound)) throw error;
    throw new FenceStateError(
      path,
      `Cannot read fence state ${JSON.stringify(path)}: no such file; run fence record first ` +
        "(or give --state)",
    );
  }
  const state = JSON.parse(text) as FenceState;
  if (!Array.isArray(state?.functions)) {
    throw new FenceStateError(
      path,
      `Cannot read fence state ${JSON.stringify(path)}: no "functions" array`,
    );
  }
  return state;
}

/**
 * Writes a new record. An existing one is never overwritten unless `force`: recording again
 * after `fence disable` would record `false` for every function and lose the values to restore.
 */
export async function writeFenceState(
  path: string,
  state: FenceState,
  force: boolean,
): Promise<void> {
  try {
    await Deno.writeTextFile(path, `${JSON.stringify(state, null, 2)}\n`, { createNew: !force });
  } catch (error) {
    if (!(error instanceof Deno.errors.AlreadyExists)) throw error;
    throw new FenceStateError(
      path,
      `Cannot record the fence: ${JSON.stringify(path)} already holds a record (a rollout in ` +
        "progress?); restore it with fence restore, or pass --force to replace it",
    );
  }
}
