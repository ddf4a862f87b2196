-- Rate limits per key (issue 46, docs/flow_control.md#rate-limits): the columns and the table; the
-- routines and triggers that use them come with the next migration.
--
-- A step with a rate limit of N per P seconds lets at most N of its tasks with the same key begin
-- their first attempt in any window of P seconds. Its tasks are held like a concurrency-limited
-- step's (a `queued` task with its key and no message); a key has at most one task sent and not
-- yet claimed at a time, sent with a visibility that is the moment its window has room. The
-- step's key is the one its concurrency limit reads (steps.opt_concurrency_key).

alter table sluice.steps
  add column opt_rate_limit integer check (opt_rate_limit >= 1),
  add column opt_rate_period integer check (opt_rate_period >= 1),
  add check ((opt_rate_limit is null) = (opt_rate_period is null));

-- The first claims of a rate-limited step's tasks, per key, for as long as they can count in a
-- window (release_held_tasks deletes the older ones).
create table sluice.rate_limit_starts (
  flow_slug text not null,
  step_slug text not null,
  rate_key text not null,
  started_at timestamptz not null,
  foreign key (flow_slug, step_slug) references sluice.steps (flow_slug, step_slug)
    on delete cascade
);

comment on table sluice.rate_limit_starts is
  'The recent first claims of each rate-limited step''s tasks, per key: the window a rate limit counts.';

create index rate_limit_starts_key_idx on sluice.rate_limit_starts
  (flow_slug, step_slug, rate_key, started_at);

revoke all on sluice.rate_limit_starts from public;
