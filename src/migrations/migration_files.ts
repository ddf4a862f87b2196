/**
 * sluice's migrations in the order they apply: the files of `supabase/migrations/`, listed because
 * a package loaded from a remote URL cannot list a directory. tests/ops/migrate_test.ts checks that
 * this list equals the directory; add every new migration here.
 *
 * @module
 */

/** The file names of sluice's migrations, in order. */
export const MIGRATION_FILES: readonly string[] = [
  "20261130000000_pgmq_extension.sql",
  "20261130000100_sluice_definitions.sql",
  "20261130000200_sluice_runtime_tables.sql",
  "20261130000250_sluice_lock_run_steps.sql",
  "20261130000300_sluice_workers.sql",
  "20261130000350_sluice_retry_policy.sql",
  "20261130000400_sluice_run_transitions.sql",
  "20261130000500_sluice_start_flow.sql",
  "20261130000600_sluice_start_tasks.sql",
  "20261130000700_sluice_complete_tasks.sql",
  "20261130000800_sluice_fail_task.sql",
  "20261130000900_sluice_requeue_stalled_tasks.sql",
  "20261130001000_sluice_queue_names.sql",
  "20261130001100_sluice_ensure_flow_compiled.sql",
  "20261130001200_sluice_maintenance.sql",
  "20261130001300_sluice_monitoring_views.sql",
  "20261130001400_sluice_respawn_debounce.sql",
  "20261130001500_sluice_privileges.sql",
  "20261130001600_sluice_rollout.sql",
  "20261130001700_sluice_run_events.sql",
  "20261130001800_sluice_aliases.sql",
  "20261202000100_sluice_run_control.sql",
  "20261202000200_sluice_schedules.sql",
  "20261202000300_sluice_waits.sql",
  "20261202000400_sluice_server_cost.sql",
  "20261202000500_sluice_refuse_routed.sql",
  "20261207000200_sluice_cancel_sees_new_tasks.sql",
  "20261207000300_sluice_wait_for_messages.sql",
  "20261207000400_sluice_pin_search_path.sql",
  "20261207000450_sluice_queue_tables.sql",
  "20261207000500_sluice_signals_schedules.sql",
  "20261207000600_sluice_prune_pinned.sql",
  "20261207000700_sluice_dev_recompile_keeps_waits.sql",
  "20261207001000_sluice_batch_sizes.sql",
  "20261207001300_sluice_idempotent_start.sql",
  "20261207001500_sluice_trace_context.sql",
  "20261207002000_sluice_subflows.sql",
  "20261207133532_sluice_attempt_telemetry.sql",
  "20261207134541_sluice_notify_minimal.sql",
  "20261207231000_sluice_concurrency_tables.sql",
  "20261207232321_sluice_concurrency_limits.sql",
  "20261207234000_sluice_rate_limit_tables.sql",
  "20261207234001_sluice_rate_limits.sql",
];
