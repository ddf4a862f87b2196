/**
 * The commands of `deno task ops`, in the order `--help` lists them.
 *
 * @module
 */

import type { OpsCommand } from "./_command.ts";
import { aliasesActivateCommand } from "./aliases_activate.ts";
import { aliasesHistoryCommand } from "./aliases_history.ts";
import { aliasesListCommand } from "./aliases_list.ts";
import { clearPauseCommand } from "./clear_pause.ts";
import { coverageCommand } from "./coverage.ts";
import { dashboardCommand } from "./dashboard.ts";
import { fenceConfirmCommand } from "./fence_confirm.ts";
import { fenceDiffCommand } from "./fence_diff.ts";
import { fenceDisableCommand } from "./fence_disable.ts";
import { fenceDrainCommand } from "./fence_drain.ts";
import { fenceRecordCommand } from "./fence_record.ts";
import { fenceRestoreCommand } from "./fence_restore.ts";
import { flowsResetCommand } from "./flows_reset.ts";
import {
  functionsDeprecateCommand,
  functionsDisableCommand,
  functionsEnableCommand,
} from "./function_switches.ts";
import { functionsCommand } from "./functions.ts";
import { functionsPruneCommand } from "./functions_prune.ts";
import { pruneCommand } from "./prune.ts";
import { queuesArchiveCommand } from "./queues_archive.ts";
import { queuesCommand } from "./queues.ts";
import { runCommand } from "./run.ts";
import { runCancelCommand } from "./run_cancel.ts";
import { runRetryCommand } from "./run_retry.ts";
import { runsCommand } from "./runs.ts";
import { runsCancelCommand } from "./runs_cancel.ts";
import { versionDrainCommand } from "./version_drain.ts";

export type { CommandArgs, OpsCommand, OpsIo, OptionSpec } from "./_command.ts";
export { optionString } from "./_command.ts";

/** Every ops command. */
export const COMMANDS: readonly OpsCommand[] = [
  coverageCommand,
  queuesCommand,
  queuesArchiveCommand,
  functionsCommand,
  functionsEnableCommand,
  functionsDisableCommand,
  functionsDeprecateCommand,
  functionsPruneCommand,
  clearPauseCommand,
  runsCommand,
  runCommand,
  runCancelCommand,
  runRetryCommand,
  runsCancelCommand,
  fenceDiffCommand,
  fenceRecordCommand,
  fenceDisableCommand,
  fenceDrainCommand,
  fenceRestoreCommand,
  fenceConfirmCommand,
  aliasesListCommand,
  aliasesActivateCommand,
  aliasesHistoryCommand,
  versionDrainCommand,
  pruneCommand,
  flowsResetCommand,
  dashboardCommand,
];
