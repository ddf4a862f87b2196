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
import { runsCommand } from "./runs.ts";
import { schedulesCreateCommand } from "./schedules_create.ts";
import { schedulesDeleteCommand } from "./schedules_delete.ts";
import { schedulesListCommand } from "./schedules_list.ts";
import { schedulesPauseCommand, schedulesResumeCommand } from "./schedules_pause.ts";
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
  schedulesListCommand,
  schedulesCreateCommand,
  schedulesPauseCommand,
  schedulesResumeCommand,
  schedulesDeleteCommand,
  pruneCommand,
  flowsResetCommand,
  dashboardCommand,
];
