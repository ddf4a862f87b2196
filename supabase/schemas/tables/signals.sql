-- sluice.signals, as the migrations create it.
-- Generated: change it by a migration, then `deno task schema:dump --force` (docs/sql.md).

CREATE TABLE sluice.signals (
    signal_id text NOT NULL,
    signal_key text NOT NULL,
    payload jsonb DEFAULT 'null'::jsonb NOT NULL,
    sent_at timestamp with time zone DEFAULT clock_timestamp() NOT NULL,
    sent_by text DEFAULT CURRENT_USER NOT NULL,
    expires_at timestamp with time zone NOT NULL,
    consumed_at timestamp with time zone,
    CONSTRAINT signals_signal_id_check CHECK (((char_length(signal_id) >= 1) AND (char_length(signal_id) <= 1000))),
    CONSTRAINT signals_signal_key_check CHECK (((char_length(signal_key) >= 1) AND (char_length(signal_key) <= 1000)))
);

ALTER TABLE ONLY sluice.signals
    ADD CONSTRAINT signals_pkey PRIMARY KEY (signal_id);

CREATE INDEX signals_buffered_idx ON sluice.signals USING btree (signal_key, sent_at) WHERE (consumed_at IS NULL);

CREATE INDEX signals_consumed_idx ON sluice.signals USING btree (consumed_at) WHERE (consumed_at IS NOT NULL);

CREATE INDEX signals_expires_idx ON sluice.signals USING btree (expires_at);

CREATE POLICY flow_access ON sluice.signals USING (((( SELECT sluice.access_scope(CURRENT_USER) AS access_scope) IS NULL) OR (sent_by = (CURRENT_USER)::text) OR (sluice.access_scope((sent_by)::name) IS NULL))) WITH CHECK (((( SELECT sluice.access_scope(CURRENT_USER) AS access_scope) IS NULL) OR (sent_by = (CURRENT_USER)::text)));

ALTER TABLE sluice.signals ENABLE ROW LEVEL SECURITY;
