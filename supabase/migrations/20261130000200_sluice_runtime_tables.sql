-- sluice runtime tables: runs, step states and tasks.
--
-- Lock order (one global order; no transaction waits for a lock earlier in it than one it holds,
-- so none can deadlock):
--   sluice.runs (for update) -> sluice.step_states -> sluice.step_tasks -> PGMQ message rows.
-- Every terminal transition of a run, a step or a started task first holds the run row lock.
-- The claim (sluice.start_tasks) only moves tasks from queued to started and takes no run or step
-- lock. In the worker's fused statement pgmq.read has already locked the batch's messages when
-- the claim reaches the tasks; the claim locks those with skip locked and treats a task it cannot
-- lock as a benign duplicate, so it never waits for a task while holding a message.

create table sluice.runs (
  run_id uuid primary key default gen_random_uuid(),
  flow_slug text not null references sluice.flows (flow_slug),
  -- the name the caller used: an alias or the concrete slug
  started_via text not null,
  status text not null default 'started' check (status in ('started', 'completed', 'failed')),
  input jsonb not null,
  output jsonb,
  error_message text,
  remaining_steps integer not null check (remaining_steps >= 0),
  started_at timestamptz not null default now(),
  completed_at timestamptz,
  failed_at timestamptz,
  check (num_nonnulls(completed_at, failed_at) <= 1),
  check ((status = 'completed') = (completed_at is not null)),
  check ((status = 'failed') = (failed_at is not null))
);

create index runs_flow_slug_idx on sluice.runs (flow_slug);
create index runs_finished_idx on sluice.runs (coalesce(completed_at, failed_at))
  where status <> 'started';

create table sluice.step_states (
  run_id uuid not null references sluice.runs (run_id) on delete cascade,
  step_slug text not null,
  flow_slug text not null,
  status text not null default 'created'
    check (status in ('created', 'started', 'completed', 'failed', 'skipped', 'cancelled')),
  remaining_deps integer not null check (remaining_deps >= 0),
  initial_tasks integer check (initial_tasks >= 0),
  remaining_tasks integer check (remaining_tasks >= 0),
  output jsonb,
  skip_reason text check (skip_reason in ('condition_unmet', 'retries_exhausted', 'dependency_skipped')),
  error_message text,
  created_at timestamptz not null default now(),
  started_at timestamptz,
  completed_at timestamptz,
  failed_at timestamptz,
  skipped_at timestamptz,
  cancelled_at timestamptz,
  primary key (run_id, step_slug),
  foreign key (flow_slug, step_slug) references sluice.steps (flow_slug, step_slug),
  check (num_nonnulls(completed_at, failed_at, skipped_at, cancelled_at) <= 1),
  check ((status = 'completed') = (completed_at is not null)),
  check ((status = 'failed') = (failed_at is not null)),
  check ((status = 'skipped') = (skipped_at is not null and skip_reason is not null)),
  check ((status = 'cancelled') = (cancelled_at is not null))
);

-- Ready steps are found by (run, remaining_deps = 0) among created ones.
create index step_states_ready_idx on sluice.step_states (run_id)
  where status = 'created' and remaining_deps = 0;

create table sluice.step_tasks (
  run_id uuid not null,
  step_slug text not null,
  task_index integer not null check (task_index >= 0),
  flow_slug text not null,
  -- immutable snapshot of the step's route when the task was created: every queue operation on
  -- this task uses it, never flow_slug
  queue_name text not null,
  message_id bigint,
  -- a map task's element of the array it maps over, stored when the map starts so that a claim
  -- reads its own element and never the whole array (null for single steps, whose input is their
  -- dependencies' outputs, read at claim time)
  input jsonb,
  status text not null default 'queued'
    check (status in ('queued', 'started', 'completed', 'failed', 'skipped', 'cancelled')),
  attempts_count integer not null default 0 check (attempts_count >= 0),
  requeued_count integer not null default 0 check (requeued_count >= 0),
  last_worker_id uuid,
  error_message text,
  output jsonb,
  queued_at timestamptz not null default now(),
  started_at timestamptz,
  completed_at timestamptz,
  failed_at timestamptz,
  skipped_at timestamptz,
  cancelled_at timestamptz,
  permanently_stalled_at timestamptz,
  primary key (run_id, step_slug, task_index),
  foreign key (run_id, step_slug) references sluice.step_states (run_id, step_slug)
    on delete cascade,
  check (num_nonnulls(completed_at, failed_at, skipped_at, cancelled_at) <= 1),
  check ((status = 'completed') = (completed_at is not null)),
  check ((status = 'failed') = (failed_at is not null)),
  check ((status = 'skipped') = (skipped_at is not null)),
  check ((status = 'cancelled') = (cancelled_at is not null)),
  check (status <> 'started' or started_at is not null)
);

-- Message identity is (queue_name, message_id): the claim looks tasks up by it. Message id first,
-- so that every such lookup probes the index by its ids: led by queue_name, a plan estimating
-- few tasks per queue (statistics averaged over many queues) read every task of the queue and
-- matched the ids afterwards, a cost that grew with the queue (a wide map's step most of all).
create unique index step_tasks_message_key on sluice.step_tasks (message_id, queue_name)
  where message_id is not null;

-- Stalled recovery scans started tasks only. The predicate names started_at as well so that only
-- a query that says so (recovery) can use the index: with "status = 'started'" alone, every
-- completion (which also filters on it) could be planned as a scan of all started tasks of all
-- flows, whenever the statistics were taken while few tasks ran.
create index step_tasks_started_idx on sluice.step_tasks (started_at)
  where status = 'started' and started_at is not null;

-- Route coverage (docs/sql.md#monitoring-views) counts queued tasks per route; this keeps that
-- count an index scan.
create index step_tasks_queued_idx on sluice.step_tasks (flow_slug, step_slug)
  where status = 'queued';

-- A task's flow, queue and message never change once set. The trigger is declared on those
-- columns only, so ordinary status updates do not fire it.
create function sluice.reject_task_identity_change()
returns trigger
language plpgsql
as $$
begin
  if new.flow_slug is distinct from old.flow_slug
    or new.queue_name is distinct from old.queue_name
    or (old.message_id is not null and new.message_id is distinct from old.message_id)
  then
    raise exception 'Cannot change the identity of task (%, %, %): flow_slug, queue_name and message_id are immutable',
      old.run_id, old.step_slug, old.task_index
      using errcode = 'integrity_constraint_violation';
  end if;
  return new;
end;
$$;

create trigger step_tasks_identity_immutable
before update of flow_slug, queue_name, message_id on sluice.step_tasks
for each row execute function sluice.reject_task_identity_change();
