-- Key/value facts about this server's local database: which store it was
-- built from, so a cache directory pointed at another store is noticed.
CREATE TABLE IF NOT EXISTS dhsi_meta.local_facts (
    key VARCHAR PRIMARY KEY,
    value VARCHAR NOT NULL
);
