/**
 * The one command registry of the `sluice` command line: every command, under the heading
 * `sluice --help` lists it under. Help, dispatch and the suggestion for a mistyped name all read
 * it; adding a command is one entry here (and its module).
 *
 * @module
 */

import { aliasesActivateCommand } from "../ops/commands/aliases_activate.ts";
import { aliasesHistoryCommand } from "../ops/commands/aliases_history.ts";
import { aliasesListCommand } from "../ops/commands/aliases_list.ts";
import { clearPauseCommand } from "../ops/commands/clear_pause.ts";
import { coverageCommand } from "../ops/commands/coverage.ts";
import { dashboardCommand } from "../ops/commands/dashboard.ts";
import { fenceConfirmCommand } from "../ops/commands/fence_confirm.ts";
import { fenceDiffCommand } from "../ops/commands/fence_diff.ts";
import { fenceDisableCommand } from "../ops/commands/fence_disable.ts";
import { fenceDrainCommand } from "../ops/commands/fence_drain.ts";
import { fenceRecordCommand } from "../ops/commands/fence_record.ts";
import { fenceRestoreCommand } from "../ops/commands/fence_restore.ts";
import { flowsResetCommand } from "../ops/commands/flows_reset.ts";
import {
  functionsDeprecateCommand,
  functionsDisableCommand,
  functionsEnableCommand,
} from "../ops/commands/function_switches.ts";
import { functionsCommand } from "../ops/commands/functions.ts";
import { functionsPruneCommand } from "../ops/commands/functions_prune.ts";
import { pruneCommand } from "../ops/commands/prune.ts";
import { queuesArchiveCommand } from "../ops/commands/queues_archive.ts";
import { queuesCommand } from "../ops/commands/queues.ts";
import { runCommand } from "../ops/commands/run.ts";
import { runCancelCommand } from "../ops/commands/run_cancel.ts";
import { runRetryCommand } from "../ops/commands/run_retry.ts";
import { runsCommand } from "../ops/commands/runs.ts";
import { runsCancelCommand } from "../ops/commands/runs_cancel.ts";
import { schedulesCreateCommand } from "../ops/commands/schedules_create.ts";
import { schedulesDeleteCommand } from "../ops/commands/schedules_delete.ts";
import { schedulesListCommand } from "../ops/commands/schedules_list.ts";
import { schedulesPauseCommand, schedulesResumeCommand } from "../ops/commands/schedules_pause.ts";
import { versionDrainCommand } from "../ops/commands/version_drain.ts";
import { type CliCommand, type CommandSection, isOpsCommand } from "./command.ts";
import {
  devCliCommand,
  functionsGenerateCliCommand,
  installCliCommand,
  migrateCliCommand,
} from "./project_commands.ts";

/** Every command, by heading, in the order `sluice --help` lists them. */
export const SECTIONS: readonly CommandSection[] = [
  {
    title: "Project",
    commands: [installCliCommand, migrateCliCommand, functionsGenerateCliCommand],
  },
  { title: "Development", commands: [devCliCommand, flowsResetCommand] },
  {
    title: "Operations (DATABASE_URL; docs/ops.md describes them)",
    commands: [
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
      schedulesListCommand,
      schedulesCreateCommand,
      schedulesPauseCommand,
      schedulesResumeCommand,
      schedulesDeleteCommand,
      pruneCommand,
      dashboardCommand,
    ],
  },
];

/** Every command. */
export const COMMANDS: readonly CliCommand[] = SECTIONS.flatMap((section) => section.commands);

/** The commands `sluice ops <command>` runs: the ones that work on the sluice database. */
export const OPS_SECTIONS: readonly CommandSection[] = SECTIONS
  .map((section) => ({ ...section, commands: section.commands.filter(isOpsCommand) }))
  .filter((section) => section.commands.length > 0);
