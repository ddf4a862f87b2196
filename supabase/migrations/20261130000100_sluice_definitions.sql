-- sluice definition tables: flows, the queue registry, steps and their dependencies.
-- Rows here are written only by sluice.ensure_flow_compiled (startup compilation,
-- docs/architecture.md#startup-compilation) and removed only by sluice.delete_flow_and_data.

create schema if not exists sluice;

-- Slug rules (docs/architecture.md#queue-modes-and-names): a letter first, then letters, digits
-- and single underscores, no trailing underscore. The DSL checks the same rules synchronously;
-- this is the authority.
create function sluice.is_valid_slug(slug text)
returns boolean
language sql
immutable
as $$
  select slug is not null
    and slug ~ '^[A-Za-z][A-Za-z0-9_]*$'
    and slug !~ '__'
    and slug !~ '_$'
    and length(slug) <= 128
$$;

-- Size limits (docs/sql.md#limits), runtime options of a flow: a run input and a step output as
-- JSON text (PostgreSQL's jsonb text form) at most opt_max_input_bytes / opt_max_output_bytes,
-- a map at most opt_max_map_tasks tasks. Refusals raise SQLSTATE SLL01. The defaults here are
-- the SQL side of src/dsl/limits.ts (tests/sql/limits_test.ts holds the two equal).
create function sluice.default_max_json_bytes()
returns integer
language sql
immutable
as $$ select 16 * 1024 * 1024 $$;

create function sluice.default_max_map_tasks()
returns integer
language sql
immutable
as $$ select 10000 $$;

-- Every compile of a flow (create_flow, so also each development recompile) takes the next value:
-- a worker records the value it compiled against, and one registered for an older compile is
-- fenced (sluice.worker_fenced).
create sequence sluice.flow_compile_generations;

create table sluice.flows (
  flow_slug text primary key check (sluice.is_valid_slug(flow_slug)),
  compile_generation bigint not null default nextval('sluice.flow_compile_generations'),
  queue_mode text not null check (queue_mode in ('flow', 'step', 'routed')),
  opt_max_attempts integer not null default 3 check (opt_max_attempts >= 1),
  opt_base_delay integer not null default 1 check (opt_base_delay >= 1),
  opt_timeout integer not null default 60 check (opt_timeout >= 1),
  opt_max_input_bytes integer not null default sluice.default_max_json_bytes()
    check (opt_max_input_bytes >= 1),
  opt_max_output_bytes integer not null default sluice.default_max_json_bytes()
    check (opt_max_output_bytes >= 1),
  opt_max_map_tasks integer not null default sluice.default_max_map_tasks()
    check (opt_max_map_tasks >= 1),
  created_at timestamptz not null default now()
);

-- One flow per case-insensitive slug: queue names derive from lower(flow_slug).
create unique index flows_lower_slug_key on sluice.flows (lower(flow_slug));

-- Physical queues sluice created or explicitly adopted. The name is canonical lowercase so that
-- pgmq.meta, this registry and every task snapshot spell a queue identically.
create table sluice.queues (
  queue_name text primary key check (queue_name = lower(queue_name)),
  ownership text not null check (ownership in ('private', 'shared')),
  owner_flow_slug text references sluice.flows (flow_slug) on delete cascade,
  created_at timestamptz not null default now(),
  check ((ownership = 'private') = (owner_flow_slug is not null))
);

create table sluice.steps (
  flow_slug text not null references sluice.flows (flow_slug) on delete cascade,
  step_slug text not null check (sluice.is_valid_slug(step_slug) and step_slug <> 'run'),
  step_index integer not null check (step_index >= 0),
  step_type text not null check (step_type in ('single', 'map')),
  map_source text,
  deps_count integer not null check (deps_count >= 0),
  opt_max_attempts integer check (opt_max_attempts >= 1),
  opt_base_delay integer check (opt_base_delay >= 1),
  opt_timeout integer check (opt_timeout >= 1),
  opt_start_delay integer check (opt_start_delay >= 0),
  required_input_pattern jsonb check (jsonb_typeof(required_input_pattern) = 'object'),
  forbidden_input_pattern jsonb check (jsonb_typeof(forbidden_input_pattern) = 'object'),
  when_unmet text not null default 'skip'
    check (when_unmet in ('fail', 'skip', 'skip-cascade')),
  when_exhausted text not null default 'fail'
    check (when_exhausted in ('fail', 'skip', 'skip-cascade')),
  queue_name text not null references sluice.queues (queue_name),
  created_at timestamptz not null default now(),
  primary key (flow_slug, step_slug),
  unique (flow_slug, step_index),
  check (map_source is null or step_type = 'map'),
  check (map_source is null or deps_count = 1)
);

create unique index steps_lower_slug_key on sluice.steps (flow_slug, lower(step_slug));
create index steps_queue_name_idx on sluice.steps (queue_name);

create table sluice.deps (
  flow_slug text not null,
  dep_slug text not null,
  step_slug text not null,
  primary key (flow_slug, step_slug, dep_slug),
  foreign key (flow_slug, dep_slug) references sluice.steps (flow_slug, step_slug)
    on delete cascade,
  foreign key (flow_slug, step_slug) references sluice.steps (flow_slug, step_slug)
    on delete cascade,
  check (dep_slug <> step_slug)
);

-- Dependents are looked up on every step completion.
create index deps_dependents_idx on sluice.deps (flow_slug, dep_slug);

-- Stable caller-facing names. Compilation creates a self-alias for every concrete flow, so a
-- caller can always start a flow by its own slug.
create table sluice.aliases (
  alias text primary key check (sluice.is_valid_slug(alias)),
  flow_slug text not null references sluice.flows (flow_slug) on delete cascade,
  generation bigint not null default 1 check (generation >= 1),
  activated_at timestamptz not null default now()
);

create table sluice.alias_history (
  alias text not null,
  flow_slug text not null,
  generation bigint not null,
  activated_at timestamptz not null default now(),
  primary key (alias, generation)
);
