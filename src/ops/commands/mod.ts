/**
 * The commands of `deno task ops`, in the order `--help` lists them.
 *
 * @module
 */

import type { OpsCommand } from "./_command.ts";
import { clearPauseCommand } from "./clear_pause.ts";
import { coverageCommand } from "./coverage.ts";
import { functionsCommand } from "./functions.ts";
import { pruneCommand } from "./prune.ts";
import { queuesCommand } from "./queues.ts";

export type { CommandArgs, OpsCommand, OpsIo } from "./_command.ts";

/** Every ops command. */
export const COMMANDS: readonly OpsCommand[] = [
  coverageCommand,
  queuesCommand,
  functionsCommand,
  clearPauseCommand,
  pruneCommand,
];
