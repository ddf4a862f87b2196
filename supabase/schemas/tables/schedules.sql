-- sluice.schedules, as the migrations create it.
-- Generated: change it by a migration, then `deno task schema:dump --force` (docs/sql.md).

CREATE TABLE sluice.schedules (
    schedule_name text NOT NULL,
    target_kind text NOT NULL,
    target text NOT NULL,
    input jsonb NOT NULL,
    cron text NOT NULL,
    timezone text NOT NULL,
    missed text NOT NULL,
    next_due_at timestamp with time zone,
    following_due_at timestamp with time zone,
    advanced_at timestamp with time zone NOT NULL,
    paused_at timestamp with time zone,
    created_at timestamp with time zone DEFAULT now() NOT NULL,
    last_fired_at timestamp with time zone,
    last_run_id uuid,
    last_error text,
    CONSTRAINT schedules_check CHECK (((following_due_at IS NULL) OR (following_due_at > next_due_at))),
    CONSTRAINT schedules_missed_check CHECK ((missed = ANY (ARRAY['run-once'::text, 'skip'::text]))),
    CONSTRAINT schedules_schedule_name_check CHECK (sluice.is_valid_slug(schedule_name)),
    CONSTRAINT schedules_target_kind_check CHECK ((target_kind = ANY (ARRAY['flow'::text, 'alias'::text])))
);

COMMENT ON TABLE sluice.schedules IS 'Cron schedules of flow starts. Written by create_schedule, fire_due_schedules, set_schedule_next_due, pause_schedule, resume_schedule and delete_schedule only.';

ALTER TABLE ONLY sluice.schedules
    ADD CONSTRAINT schedules_pkey PRIMARY KEY (schedule_name);

CREATE INDEX schedules_due ON sluice.schedules USING btree (next_due_at) WHERE (paused_at IS NULL);

CREATE POLICY flow_access ON sluice.schedules USING (((( SELECT sluice.access_scope(CURRENT_USER) AS access_scope) IS NULL) OR sluice.scope_covers(( SELECT sluice.access_scope(CURRENT_USER) AS access_scope), target)));

ALTER TABLE sluice.schedules ENABLE ROW LEVEL SECURITY;
