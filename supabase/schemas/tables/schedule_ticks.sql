-- sluice.schedule_ticks, as the migrations create it.
-- Generated: change it by a migration, then `deno task schema:dump --force` (docs/sql.md).

CREATE TABLE sluice.schedule_ticks (
    schedule_name text NOT NULL,
    due_at timestamp with time zone NOT NULL,
    fired_at timestamp with time zone NOT NULL,
    catch_up boolean NOT NULL,
    run_id uuid,
    error text
);

COMMENT ON TABLE sluice.schedule_ticks IS 'One row per fired tick of a schedule; its primary key is what makes a tick start exactly one run.';

ALTER TABLE ONLY sluice.schedule_ticks
    ADD CONSTRAINT schedule_ticks_pkey PRIMARY KEY (schedule_name, due_at);

ALTER TABLE ONLY sluice.schedule_ticks
    ADD CONSTRAINT schedule_ticks_schedule_name_fkey FOREIGN KEY (schedule_name) REFERENCES sluice.schedules(schedule_name) ON DELETE CASCADE;

CREATE POLICY flow_access ON sluice.schedule_ticks USING (((( SELECT sluice.access_scope(CURRENT_USER) AS access_scope) IS NULL) OR (EXISTS ( SELECT 1
   FROM sluice.schedules s
  WHERE (s.schedule_name = schedule_ticks.schedule_name)))));

ALTER TABLE sluice.schedule_ticks ENABLE ROW LEVEL SECURITY;
