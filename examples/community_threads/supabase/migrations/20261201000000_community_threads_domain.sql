-- The community-threads domain: threads, their classifications and their Slack deliveries.
-- Both versions of the application (hand-written PGMQ workers and the sluice flow) write these
-- tables through the same functions of supabase/functions/_shared/threads.ts.
--
-- Lock order: threads row, then its classifications and deliveries rows.
-- Invariants: a thread moves only new -> classified -> alerted | ignored | failed (the trigger
-- refuses anything else and records every move in thread_transitions), so a thread has at most
-- one terminal status and one row per transition; one classification and one delivery per thread.

create table public.threads (
  id integer generated always as identity primary key,
  title text not null,
  body text not null,
  status text not null default 'new'
    check (status in ('new', 'classified', 'alerted', 'ignored', 'failed')),
  created_at timestamptz not null default clock_timestamp()
);

create table public.classifications (
  thread_id integer primary key references public.threads (id),
  category text not null,
  urgency integer not null check (urgency between 0 and 3),
  urgent boolean not null,
  created_at timestamptz not null default clock_timestamp()
);

-- One row per thread that needed an alert: how many posts were tried and what Slack answered.
-- `slack_ts` is Slack's message timestamp, known once a post was answered with ok.
create table public.deliveries (
  thread_id integer primary key references public.threads (id),
  status text not null default 'pending' check (status in ('pending', 'sent', 'failed')),
  posts_tried integer not null default 0,
  slack_ts text,
  last_error text,
  updated_at timestamptz not null default clock_timestamp()
);

create table public.thread_transitions (
  thread_id integer not null references public.threads (id),
  from_status text not null,
  to_status text not null,
  at timestamptz not null default clock_timestamp(),
  primary key (thread_id, to_status)
);

-- Refuses a status change outside the state machine, records the allowed ones.
create function public.guard_thread_transition()
returns trigger
language plpgsql
as $$
begin
  if new.status = old.status then
    return new;
  end if;
  if not ((old.status = 'new' and new.status = 'classified')
    or (old.status = 'classified' and new.status in ('alerted', 'ignored', 'failed'))) then
    raise exception 'Cannot move thread %: % -> % is not a transition of a thread',
      old.id, old.status, new.status;
  end if;
  insert into public.thread_transitions (thread_id, from_status, to_status)
  values (new.id, old.status, new.status);
  return new;
end;
$$;

create trigger threads_guard_transition
before update of status on public.threads
for each row execute function public.guard_thread_transition();
