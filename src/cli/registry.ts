/**
 * The one command registry of the `sluice` command line: every command, under the heading
 * `sluice --help` lists it under. Help, dispatch and the suggestion for a mistyped name all read
 * it; adding a command is one entry here (and its module).
 *
 * @module
 */

import { aliasesActivateCommand } from "./commands/aliases_activate.ts";
import { aliasesHistoryCommand } from "./commands/aliases_history.ts";
import { aliasesListCommand } from "./commands/aliases_list.ts";
import { clearPauseCommand } from "./commands/clear_pause.ts";
import { coverageCommand } from "./commands/coverage.ts";
import { dashboardCommand } from "./commands/dashboard.ts";
import { fenceConfirmCommand } from "./commands/fence_confirm.ts";
import { fenceDiffCommand } from "./commands/fence_diff.ts";
import { fenceDisableCommand } from "./commands/fence_disable.ts";
import { fenceDrainCommand } from "./commands/fence_drain.ts";
import { fenceRecordCommand } from "./commands/fence_record.ts";
import { fenceRestoreCommand } from "./commands/fence_restore.ts";
import { flowsResetCommand } from "./commands/flows_reset.ts";
import {
  functionsDeprecateCommand,
  functionsDisableCommand,
  functionsEnableCommand,
} from "./commands/function_switches.ts";
import { functionsCommand } from "./commands/functions.ts";
import { functionsPruneCommand } from "./commands/functions_prune.ts";
import { pruneCommand } from "./commands/prune.ts";
import { queuesArchiveCommand } from "./commands/queues_archive.ts";
import { queuesCommand } from "./commands/queues.ts";
import { concurrencyCommand } from "./commands/concurrency.ts";
import { runCommand } from "./commands/run.ts";
import { runCancelCommand } from "./commands/run_cancel.ts";
import { runRetryCommand } from "./commands/run_retry.ts";
import { runsCommand } from "./commands/runs.ts";
import { runsCancelCommand } from "./commands/runs_cancel.ts";
import { schedulesCreateCommand } from "./commands/schedules_create.ts";
import { schedulesDeleteCommand } from "./commands/schedules_delete.ts";
import { schedulesListCommand } from "./commands/schedules_list.ts";
import { schedulesPauseCommand, schedulesResumeCommand } from "./commands/schedules_pause.ts";
import { signalsListCommand } from "./commands/signals_list.ts";
import { startCommand } from "./commands/start.ts";
import { signalsSendCommand } from "./commands/signals_send.ts";
import { versionDrainCommand } from "./commands/version_drain.ts";
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
      concurrencyCommand,
      functionsCommand,
      functionsEnableCommand,
      functionsDisableCommand,
      functionsDeprecateCommand,
      functionsPruneCommand,
      clearPauseCommand,
      startCommand,
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
      signalsListCommand,
      signalsSendCommand,
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
