-- Concurrency limits per key (issue 46, docs/flow_control.md#concurrency-limits): the columns,
-- table and indexes; the routines and triggers that use them come with the next migration.
--
-- A step with a concurrency limit of N lets at most N of its tasks with the same key hold a slot
-- at once. A task holds a slot from the moment its message is sent until it is terminal; a task
-- over the limit is held: a `queued` row with a key and no message, which no worker can read or
-- claim. A slot is counted, not stored: the tasks of the key with a message that are `queued` or
-- `started`, so no path that ends a task (completion, failure, cancel, skip, stall recovery,
-- deletion) can leak one.

-- The step's limit and the path into the run input its key is read from (null: the run's
-- concurrency key given at start, else one limit shared by every run). Runtime options.
alter table sluice.steps
  add column opt_concurrency_limit integer check (opt_concurrency_limit >= 1),
  add column opt_concurrency_key text[];

-- The key a limited step's task counts under ('' is the shared key); null for an unlimited step.
alter table sluice.step_tasks add column concurrency_key text;

-- The concurrency key a start gave (startFlow(..., { concurrencyKey })), for the limited steps
-- that read no path. Deferred for the same reason as idempotency_keys: the key is written before
-- the run it names.
create table sluice.run_concurrency_keys (
  run_id uuid primary key,
  concurrency_key text not null,
  foreign key (run_id) references sluice.runs (run_id) on delete cascade
    deferrable initially deferred
);

comment on table sluice.run_concurrency_keys is
  'The concurrency key a start gave its run (startFlow(..., { concurrencyKey })); deleted with its run.';

-- The slots in use of one key: the tasks that hold one. Only limited tasks have entries.
create index step_tasks_slots_idx on sluice.step_tasks (flow_slug, step_slug, concurrency_key)
  where concurrency_key is not null and message_id is not null
    and status in ('queued', 'started');

-- The held tasks of one key, oldest first: the order release_held_tasks sends them in.
create index step_tasks_held_idx on sluice.step_tasks
  (flow_slug, step_slug, concurrency_key, queued_at, run_id, task_index)
  where concurrency_key is not null and message_id is null and status = 'queued';

revoke all on sluice.run_concurrency_keys from public;
