/**
 * The mutation audit's mutants (docs/testing.md, "The mutation audit"): one-line breaks of the
 * invariants sluice's SQL and workers keep, each with the test files that must fail when it is
 * applied. `deno task test:mutants` (scripts/mutants.ts) applies each to a scratch copy of the
 * checkout and runs its guards; `tests/mutants/mutants_test.ts` keeps the list from going stale
 * (each `search` is found exactly once in its file, and changes one line).
 *
 * SQL mutants target the live definition of a routine: the last migration that defines it.
 *
 * @module
 */

/** One mutant: a one-line change to `file` and the tests that must catch it. */
export interface Mutant {
  /** A short unique name, for `--only`. */
  readonly id: string;
  /** The file it changes, relative to the repository root. */
  readonly file: string;
  /**
   * The text it replaces, found exactly once in `file`. It may hold neighbouring lines for
   * context when the changed line alone is not unique; `replace` differs from it in one line.
   */
  readonly search: string;
  /** What replaces `search`. */
  readonly replace: string;
  /** The test files (relative to the repository root) of which at least one must fail. */
  readonly guards: readonly string[];
  /** The invariant it breaks, and what a user would see. */
  readonly why: string;
}

const RUN_CONTROL = "supabase/migrations/20261202000100_sluice_run_control.sql";
const WORKERS = "supabase/migrations/20261130000300_sluice_workers.sql";
const QUEUE_NAMES = "supabase/migrations/20261130001000_sluice_queue_names.sql";
const RETRY_POLICY = "supabase/migrations/20261130000350_sluice_retry_policy.sql";
const SIGNALS_SCHEDULES = "supabase/migrations/20261207000500_sluice_signals_schedules.sql";
const BATCH_SIZES = "supabase/migrations/20261207001000_sluice_batch_sizes.sql";
const ATTEMPT_TELEMETRY = "supabase/migrations/20261207133532_sluice_attempt_telemetry.sql";
const DEBOUNCE_ACCESS = "supabase/migrations/20261208001738_sluice_flow_access_debounce.sql";
const PRIORITIES = "supabase/migrations/20261207234000_sluice_priorities.sql";
const SUBFLOWS = "supabase/migrations/20261207002000_sluice_subflows.sql";
const SUBFLOW_EVENTS = "supabase/migrations/20261207232105_sluice_subflow_events.sql";
const FLOW_ACCESS_CHECKS = "supabase/migrations/20261207235622_sluice_flow_access_checks.sql";
const MERGE_FLOW_CONTROL = "supabase/migrations/20261208002943_sluice_merge_flow_control.sql";
const RATE_LIMITS = "supabase/migrations/20261207234003_sluice_rate_limits.sql";

/** Every mutant of the audit. */
export const MUTANTS: readonly Mutant[] = [
  {
    id: "fail_task_attempt_check",
    file: RUN_CONTROL,
    search: "    and t.status = 'started' and t.attempts_count = fail_task.attempt\n",
    replace: "    and t.status = 'started'\n",
    guards: ["tests/sql/fencing_test.ts"],
    why:
      "a late failure report of attempt 1, by the worker that claimed attempt 2 after a stall, " +
      "would fail the task while attempt 2 runs",
  },
  {
    id: "fail_task_worker_check",
    file: RUN_CONTROL,
    search: "    and t.last_worker_id = fail_task.worker_id\n",
    replace: "\n",
    guards: ["tests/sql/fencing_test.ts"],
    why: "another worker's failure report with the live attempt number would fail the task",
  },
  {
    id: "fail_task_attempt_cap",
    file: RUN_CONTROL,
    search: "  if v_task.attempts_count - v_task.attempts_base >= v_max_attempts then",
    replace: "  if v_task.attempts_count - v_task.attempts_base > v_max_attempts then",
    guards: ["tests/sql/fail_task_test.ts"],
    why: "a task would get one attempt more than maxAttempts",
  },
  {
    id: "complete_tasks_stale_fencing",
    file: ATTEMPT_TELEMETRY,
    search: "        and t.status = 'started' and t.attempts_count = x.attempt\n",
    replace: "        and t.status = 'started'\n",
    guards: ["tests/sql/fencing_test.ts"],
    why:
      "a result of an attempt that was taken over would complete the task instead of being stale",
  },
  {
    id: "complete_tasks_remaining_tasks",
    file: ATTEMPT_TELEMETRY,
    search: "    if v_state.remaining_tasks > v_n then",
    replace: "    if v_state.remaining_tasks >= v_n then",
    guards: ["tests/sql/complete_tasks_test.ts"],
    why: "a step would not complete when its last tasks complete",
  },
  {
    id: "output_limit_inclusive",
    file: ATTEMPT_TELEMETRY,
    search: "  where x.flow_slug is null or x.bytes > f.opt_max_output_bytes",
    replace: "  where x.flow_slug is null or x.bytes >= f.opt_max_output_bytes",
    guards: ["tests/sql/limits_test.ts"],
    why: "an output of exactly max_output_bytes would be refused",
  },
  {
    id: "input_limit_inclusive",
    file: FLOW_ACCESS_CHECKS,
    search: "  v_bytes := octet_length(create_run.input::text);\n  if v_bytes > v_max_bytes then",
    replace: "  v_bytes := octet_length(create_run.input::text);\n  if v_bytes >= v_max_bytes then",
    guards: ["tests/sql/limits_test.ts"],
    why: "a run input of exactly max_input_bytes would be refused",
  },
  {
    id: "claim_visibility_check",
    file: ATTEMPT_TELEMETRY,
    search: "    if v_updated <> cardinality(v_vis_ids) then",
    replace: "    if v_updated < 0 then",
    guards: ["tests/sql/start_tasks_test.ts"],
    why: "a claim whose visibility update missed a message would still hand the task out, " +
      "visible to a second claimer",
  },
  {
    id: "claim_visibility_timeout",
    file: ATTEMPT_TELEMETRY,
    search: "        when t.status = 'queued' then coalesce(s.opt_timeout, f.opt_timeout) + 2",
    replace: "        when t.status = 'queued' then coalesce(s.opt_timeout, f.opt_timeout)",
    guards: ["tests/sql/start_tasks_test.ts"],
    why: "a claimed message would become visible again exactly as its handler times out",
  },
  {
    id: "start_tasks_wrong_queue_class",
    file: ATTEMPT_TELEMETRY,
    search: "          ) then 'wrong_queue' else 'missing' end",
    replace: "          ) then 'missing' else 'missing' end",
    guards: ["tests/sql/start_tasks_test.ts"],
    why: "a message naming a task of another queue would be reported as missing",
  },
  {
    id: "start_tasks_unsupported_class",
    file: ATTEMPT_TELEMETRY,
    search: "        ) then 'unsupported'",
    replace: "        ) and false then 'unsupported'",
    guards: ["tests/sql/start_tasks_test.ts"],
    why: "a worker would claim a route it does not support instead of pausing its restarts",
  },
  {
    id: "start_tasks_fenced_worker",
    file: ATTEMPT_TELEMETRY,
    search: "  if sluice.worker_fenced(start_tasks.worker_id) then",
    replace: "  if false then",
    guards: ["tests/sql/fencing_test.ts"],
    why: "a worker registered for an older compile would claim tasks of the new definition",
  },
  {
    id: "worker_fenced_generation",
    file: WORKERS,
    search: "      and f.compile_generation is distinct from w.flow_generation",
    replace: "      and false",
    guards: ["tests/sql/fencing_test.ts"],
    why: "a recompile would not fence the workers of the older compile",
  },
  {
    id: "track_worker_function_keeps_pause",
    file: WORKERS,
    search: "  on conflict (function_name) do update set updated_at = now()",
    replace: "  on conflict (function_name) do update set updated_at = now(), " +
      "restart_paused_at = null, pause_reason = null",
    guards: ["tests/sql/start_tasks_test.ts"],
    why: "every startWorker outside Edge would lift the restart pause a fatal claim set",
  },
  {
    id: "heartbeat_names_cancelled",
    file: RUN_CONTROL,
    search: "    where not (t.status is not distinct from 'started'",
    replace: "    where not (true",
    guards: ["tests/sql/run_control_test.ts"],
    why: "a handler of a cancelled run would not be aborted at the next heartbeat",
  },
  {
    id: "lock_order",
    file: SUBFLOWS,
    search: "    order by ss.run_id, ss.step_slug\n",
    replace: "    order by ss.run_id desc, ss.step_slug\n",
    guards: ["tests/sql/lock_run_steps_test.ts"],
    why: "step states would be locked against the documented (run, slug) order: deadlocks",
  },
  {
    id: "requeue_stall_margin",
    file: RETRY_POLICY,
    // Both the candidate filter and the per-task recheck of requeue_stalled_tasks add the margin,
    // so it is removed where they both read it.
    search: "as $$ select 30 $$;",
    replace: "as $$ select 0 $$;",
    guards: ["tests/sql/requeue_stalled_tasks_test.ts"],
    why: "a task would be requeued as stalled at its timeout, without the 30 s margin, while " +
      "its worker may still report",
  },
  {
    id: "backoff_cap",
    file: RETRY_POLICY,
    search: "    sluice.max_retry_delay_seconds()::double precision,",
    replace: "    2147483647::double precision,",
    guards: ["tests/sql/fail_task_test.ts"],
    why: "retry delays would grow past the 24 h cap (and overflow)",
  },
  {
    id: "cancel_archives_messages",
    file: SUBFLOWS,
    search: "    perform sluice.archive_messages(v_queues, v_ids);\n  end if;\n",
    replace: "    perform null;\n  end if;\n",
    guards: ["tests/sql/run_control_test.ts"],
    why: "a cancelled run's messages would stay on the queue and come back after a retry delay",
  },
  {
    id: "schedule_tick_unique",
    file: BATCH_SIZES,
    search: "      if v_inserted then",
    replace: "      if v_inserted is not false then",
    guards: ["tests/sql/schedules_test.ts"],
    why: "a tick already fired (its tick row exists) would start a second run",
  },
  {
    id: "schedule_next_due_cas",
    file: SIGNALS_SCHEDULES,
    search: "    where s.schedule_name = g.schedule_name and s.advanced_at = g.advanced_at",
    replace: "    where s.schedule_name = g.schedule_name",
    guards: ["tests/sql/schedules_test.ts"],
    why: "a late heartbeat's due time, computed from an older state, would be stored",
  },
  {
    id: "signal_duplicate_once",
    file: SIGNALS_SCHEDULES,
    search: "  returning true into v_inserted;\n  if v_inserted is null then\n",
    replace: "  returning true into v_inserted;\n  if false then\n",
    guards: ["tests/worker/waits_test.ts"],
    why: "a signal sent twice with the same id would be reported sent again, not a duplicate",
  },
  {
    id: "earliest_signal",
    file: FLOW_ACCESS_CHECKS,
    search: "  order by s.sent_at, s.signal_id\n",
    replace: "  order by s.sent_at desc, s.signal_id\n",
    guards: ["tests/worker/waits_test.ts"],
    why: "a wait would complete with the latest kept signal, not the documented earliest",
  },
  {
    id: "sleep_due_early",
    file: FLOW_ACCESS_CHECKS,
    search: "    v_until := coalesce(now() + make_interval(secs => v_state.wait_seconds), " +
      "v_state.wait_until);",
    replace: "    v_until := coalesce(now() + make_interval(secs => v_state.wait_seconds - 30), " +
      "v_state.wait_until);",
    guards: ["tests/worker/waits_test.ts"],
    why: "a sleep would be released 30 s before its due time",
  },
  {
    id: "signal_consumed_once",
    file: FLOW_ACCESS_CHECKS,
    search: "    and s.consumed_at is null\n",
    replace: "    and (s.consumed_at is null or true)\n",
    guards: ["tests/worker/signal_lifetime_test.ts"],
    why: "one kept signal would complete every later wait on its key, one approval many refunds",
  },
  {
    id: "signal_after_run_start",
    file: FLOW_ACCESS_CHECKS,
    search: "    and (s.sent_at >= v_run_started\n",
    replace: "    and (true\n",
    guards: ["tests/worker/signal_lifetime_test.ts", "tests/testing/kit_test.ts"],
    why: "a signal sent before a run existed (a replayed approval) would complete its wait",
  },
  {
    id: "release_due_waits_boundary",
    file: BATCH_SIZES,
    search: "    where ss.status = 'waiting' and ss.wait_until <= now()\n",
    replace: "    where ss.status = 'waiting' and ss.wait_until < now()\n",
    guards: ["tests/worker/waits_test.ts"],
    why: "a wait due at the sweep's instant would be left for a later sweep",
  },
  {
    id: "progress_dedupe",
    file: "src/events/run_event_feed.ts",
    search: "        if (step.stage !== 1 || done <= step.done) return false;",
    replace: "        if (step.stage !== 1 || done < step.done) return false;",
    guards: ["tests/events/run_event_feed_test.ts"],
    why: "watchRun() would pass on a repeated step:progress with the same count",
  },
  {
    id: "queue_name_hyphen",
    file: QUEUE_NAMES,
    search: "    and queue_name ~ '^[a-z0-9_]+$'",
    replace: "    and queue_name ~ '^[a-z0-9_-]+$'",
    guards: ["tests/dsl/queue_name_agreement_test.ts"],
    why: "SQL would admit a queue name with '-' that TypeScript refuses",
  },
  {
    id: "queue_name_length",
    file: QUEUE_NAMES,
    search: "    and octet_length(queue_name) <= sluice.max_queue_name_length()\n",
    replace: "    and octet_length(queue_name) <= sluice.max_queue_name_length() + 1\n",
    guards: ["tests/dsl/queue_name_agreement_test.ts"],
    why: "a 48-byte queue name would be admitted, whose PGMQ table names can truncate",
  },
  {
    id: "idempotency_key_claim",
    file: MERGE_FLOW_CONTROL,
    search: "  on conflict do nothing;\n  if found then\n",
    replace: "  on conflict (flow_ref, idempotency_key) do update set run_id = excluded.run_id;\n" +
      "  if found then\n",
    guards: ["tests/client/idempotent_start_test.ts"],
    why: "every start racing a key would create a run of its own instead of returning the first",
  },
  {
    id: "idempotency_input_conflict",
    file: MERGE_FLOW_CONTROL,
    search: "  if v_existing_input is distinct from start_with_options.input then\n",
    replace: "  if false then\n",
    guards: ["tests/client/idempotent_start_test.ts"],
    why: "a key reused for other work would quietly return the run of the first input",
  },
  {
    id: "child_end_event",
    file: SUBFLOW_EVENTS,
    search:
      "    perform sluice.send_run_event(new.parent_run_id, sluice.child_event(new, new.status));\n",
    replace: "    null;\n",
    guards: ["tests/events/subflow_events_test.ts"],
    why: "a watch of a parent would not see its children end (child:completed, child:failed)",
  },
  {
    id: "child_events_replayed",
    file: SUBFLOW_EVENTS,
    search: "    where c.parent_run_id = r.run_id\n",
    replace: "    where c.parent_run_id = r.run_id and false\n",
    guards: ["tests/events/subflow_events_test.ts"],
    why: "a late watch of a parent (or one after a reconnect) would miss its children's events",
  },
  {
    id: "debounce_last_input",
    file: DEBOUNCE_ACCESS,
    search: "    input = excluded.input,\n",
    replace: "    input = d.input,\n",
    guards: ["tests/client/debounced_start_test.ts"],
    why: "a debounced run would start with the first start's input instead of the last",
  },
  {
    id: "debounce_window_restart",
    file: DEBOUNCE_ACCESS,
    search: "      then least(excluded.due_at, coalesce(d.max_due_at, 'infinity'))\n",
    replace: "      then least(d.due_at, coalesce(d.max_due_at, 'infinity'))\n",
    guards: ["tests/client/debounced_start_test.ts"],
    why:
      "a start would no longer push the debounced run back: the window would be fixed from the first",
  },
  {
    id: "priority_read_ignored",
    file: PRIORITIES,
    search:
      "    where t.queue_name = v_queue and t.status = 'queued' and t.priority <> 0\n  ) then\n",
    replace: "    where false\n  ) then\n",
    guards: ["tests/client/priority_test.ts"],
    why: "every read would be PGMQ's, by msg_id: a priority run would wait behind the backlog",
  },
  {
    id: "priority_not_inherited",
    file: MERGE_FLOW_CONTROL,
    search:
      "      (select r.priority from sluice.runs r where r.run_id = start_ready_steps.run_id)\n",
    replace: "      0\n",
    guards: ["tests/client/priority_test.ts"],
    why: "only a priority run's first tasks would overtake; its later steps would queue behind",
  },
  {
    id: "concurrency_limit_ignored",
    file: RATE_LIMITS,
    search: "  select coalesce(v_step.opt_concurrency_limit, 2147483647) - count(*) into v_free\n",
    replace:
      "  select coalesce(v_step.opt_concurrency_limit, 2147483647) + 0 * count(*) into v_free\n",
    guards: [
      "tests/flow_control/concurrency_limit_test.ts",
      "tests/flow_control/concurrency_race_test.ts",
    ],
    why:
      "every release would count all slots free: more than the limit of a key would run together",
  },
  {
    id: "held_tasks_never_sent",
    file: RATE_LIMITS,
    search: "  if v_runs is null then\n    return 0;\n",
    replace: "  if true then\n    return 0;\n",
    guards: [
      "tests/flow_control/concurrency_limit_test.ts",
      "tests/flow_control/concurrency_race_test.ts",
    ],
    why: "a held task would never be sent: its run would wait forever",
  },
  {
    id: "rate_limit_ignored",
    file: RATE_LIMITS,
    search: "    v_free := 1;\n",
    replace: "    v_free := v_free;\n",
    guards: ["tests/flow_control/concurrency_race_test.ts"],
    why: "a rate-limited key would send every held task at once: the window would not hold",
  },
];
