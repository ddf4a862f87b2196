-- sluice.signals, as the migrations create it.
-- Generated: change it by a migration, then `deno task schema:dump --force` (docs/sql.md).

CREATE TABLE sluice.signals (
    signal_id text NOT NULL,
    signal_key text NOT NULL,
    payload jsonb DEFAULT 'null'::jsonb NOT NULL,
    sent_at timestamp with time zone DEFAULT now() NOT NULL,
    sent_by text DEFAULT CURRENT_USER NOT NULL,
    CONSTRAINT signals_signal_id_check CHECK (((char_length(signal_id) >= 1) AND (char_length(signal_id) <= 1000))),
    CONSTRAINT signals_signal_key_check CHECK (((char_length(signal_key) >= 1) AND (char_length(signal_key) <= 1000)))
);

ALTER TABLE ONLY sluice.signals
    ADD CONSTRAINT signals_pkey PRIMARY KEY (signal_id);

CREATE INDEX signals_key_idx ON sluice.signals USING btree (signal_key, sent_at);
