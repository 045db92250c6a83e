import Foundation

/// The PostgreSQL schema, one migration per shipped change, applied in order once each
/// and recorded in `schema_migrations`. As with the SQLite store, a shipped migration is
/// never edited. The first one creates at once what SQLite reached in its v1–v6.
///
/// Tables are keyed by `(owner, zone, …)` wherever they hold a zone's data, so that
/// they can be distributed by zone later (docs/scaling.md).
enum PostgresMigrations {
    struct Migration: Sendable {
        let version: Int
        let name: String
        let sql: String
    }

    static let all: [Migration] = [
        Migration(
            version: 1, name: "accounts, zones, records, versions, shares, usage",
            sql: """
                -- One change sequence for the whole database: every record save or delete
                -- takes the next value, which is also the record's change tag; zone and
                -- database change tokens are positions in it. A write transaction reads it
                -- with FOR UPDATE and writes it back before committing, so writers take
                -- numbers in commit order and a reader paging by token never skips a change
                -- that commits after it read (a plain SEQUENCE would allow that).
                CREATE TABLE counters (name TEXT PRIMARY KEY, value BIGINT NOT NULL);
                INSERT INTO counters (name, value) VALUES ('seq', 0);

                CREATE TABLE accounts (
                    name TEXT PRIMARY KEY,
                    email TEXT UNIQUE,
                    is_admin BOOLEAN NOT NULL DEFAULT FALSE,
                    created_at DOUBLE PRECISION NOT NULL,
                    disabled_at DOUBLE PRECISION
                );

                -- Bearer tokens: `id` finds the row, the secret is kept only as SHA-256.
                CREATE TABLE tokens (
                    id TEXT PRIMARY KEY,
                    account TEXT NOT NULL REFERENCES accounts(name) ON DELETE CASCADE,
                    secret_hash BYTEA NOT NULL,
                    created_at DOUBLE PRECISION NOT NULL,
                    expires_at DOUBLE PRECISION,
                    label TEXT
                );
                CREATE INDEX tokens_by_account ON tokens(account);

                CREATE TABLE zones (
                    owner TEXT NOT NULL REFERENCES accounts(name),
                    name TEXT NOT NULL,
                    epoch BIGINT NOT NULL,
                    changed_seq BIGINT NOT NULL,
                    PRIMARY KEY (owner, name)
                );
                CREATE TABLE zone_tombstones (owner TEXT NOT NULL, name TEXT NOT NULL, seq BIGINT NOT NULL);
                CREATE INDEX zone_tombstones_by_seq ON zone_tombstones(owner, seq);

                CREATE TABLE records (
                    owner TEXT NOT NULL,
                    zone TEXT NOT NULL,
                    record_name TEXT NOT NULL,
                    record_type TEXT NOT NULL,
                    name TEXT NOT NULL,
                    parent TEXT NOT NULL DEFAULT '',
                    body TEXT,
                    bytes BYTEA,
                    created_at DOUBLE PRECISION NOT NULL,
                    modified_at DOUBLE PRECISION NOT NULL,
                    modified_by TEXT NOT NULL,
                    seq BIGINT NOT NULL,
                    created_seq BIGINT NOT NULL DEFAULT 0,
                    share_id TEXT,
                    PRIMARY KEY (owner, zone, record_name),
                    FOREIGN KEY (owner, zone) REFERENCES zones(owner, name) ON DELETE CASCADE
                );
                CREATE UNIQUE INDEX records_by_path ON records(owner, zone, parent, name);
                CREATE INDEX records_by_seq ON records(owner, zone, seq);
                CREATE INDEX records_by_share ON records(share_id, seq) WHERE share_id IS NOT NULL;

                CREATE TABLE tombstones (
                    owner TEXT NOT NULL,
                    zone TEXT NOT NULL,
                    record_name TEXT NOT NULL,
                    seq BIGINT NOT NULL,
                    share_id TEXT,
                    kind TEXT NOT NULL
                );
                CREATE INDEX tombstones_by_seq ON tombstones(owner, zone, seq);
                CREATE INDEX tombstones_by_share ON tombstones(share_id, seq) WHERE share_id IS NOT NULL;

                CREATE TABLE versions (
                    owner TEXT NOT NULL,
                    zone TEXT NOT NULL,
                    record_name TEXT NOT NULL,
                    seq BIGINT NOT NULL,
                    created_seq BIGINT NOT NULL DEFAULT 0,
                    name TEXT NOT NULL,
                    parent TEXT NOT NULL,
                    body TEXT,
                    size BIGINT NOT NULL,
                    modified_by TEXT NOT NULL,
                    modified_at DOUBLE PRECISION NOT NULL
                );
                CREATE INDEX versions_by_record ON versions(owner, zone, record_name, created_seq, seq);
                CREATE INDEX versions_by_age ON versions(modified_at);

                CREATE TABLE shares (
                    id TEXT PRIMARY KEY,
                    owner TEXT NOT NULL,
                    zone TEXT NOT NULL,
                    root_record TEXT,
                    title TEXT NOT NULL,
                    public_permission TEXT NOT NULL,
                    url_token TEXT NOT NULL UNIQUE,
                    created_at DOUBLE PRECISION NOT NULL,
                    stopped BOOLEAN NOT NULL DEFAULT FALSE,
                    public_expires_at DOUBLE PRECISION,
                    password_salt BYTEA,
                    password_hash BYTEA
                );
                CREATE INDEX shares_by_zone ON shares(owner, zone) WHERE NOT stopped;

                CREATE TABLE participants (
                    share_id TEXT NOT NULL REFERENCES shares(id),
                    position INTEGER NOT NULL,
                    account TEXT,
                    email TEXT,
                    role TEXT NOT NULL,
                    permission TEXT NOT NULL,
                    status TEXT NOT NULL,
                    changed_seq BIGINT NOT NULL,
                    PRIMARY KEY (share_id, position)
                );
                CREATE UNIQUE INDEX participants_by_account ON participants(share_id, account);
                CREATE INDEX participants_of_account ON participants(account, status);
                CREATE INDEX participants_by_email ON participants(email) WHERE account IS NULL;

                CREATE TABLE password_attempts (
                    key TEXT PRIMARY KEY,
                    window_start DOUBLE PRECISION NOT NULL,
                    failures INTEGER NOT NULL
                );

                -- Bytes each account's zones hold (note text, attachments, kept versions'
                -- text), kept exact by triggers whatever the path, so a quota check reads one row.
                CREATE TABLE usage (
                    owner TEXT PRIMARY KEY,
                    bytes BIGINT NOT NULL DEFAULT 0
                );
                CREATE FUNCTION usage_of_record() RETURNS trigger LANGUAGE plpgsql AS $$
                BEGIN
                    IF TG_OP IN ('UPDATE', 'DELETE') THEN
                        UPDATE usage SET bytes = bytes - COALESCE(octet_length(OLD.body), 0) - COALESCE(octet_length(OLD.bytes), 0) WHERE owner = OLD.owner;
                    END IF;
                    IF TG_OP IN ('INSERT', 'UPDATE') THEN
                        INSERT INTO usage (owner, bytes) VALUES (NEW.owner, 0) ON CONFLICT (owner) DO NOTHING;
                        UPDATE usage SET bytes = bytes + COALESCE(octet_length(NEW.body), 0) + COALESCE(octet_length(NEW.bytes), 0) WHERE owner = NEW.owner;
                    END IF;
                    RETURN NULL;
                END $$;
                CREATE TRIGGER usage_records AFTER INSERT OR DELETE OR UPDATE OF body, bytes ON records
                    FOR EACH ROW EXECUTE FUNCTION usage_of_record();
                CREATE FUNCTION usage_of_version() RETURNS trigger LANGUAGE plpgsql AS $$
                BEGIN
                    IF TG_OP = 'DELETE' THEN
                        UPDATE usage SET bytes = bytes - COALESCE(octet_length(OLD.body), 0) WHERE owner = OLD.owner;
                    ELSE
                        INSERT INTO usage (owner, bytes) VALUES (NEW.owner, 0) ON CONFLICT (owner) DO NOTHING;
                        UPDATE usage SET bytes = bytes + COALESCE(octet_length(NEW.body), 0) WHERE owner = NEW.owner;
                    END IF;
                    RETURN NULL;
                END $$;
                CREATE TRIGGER usage_versions AFTER INSERT OR DELETE ON versions
                    FOR EACH ROW EXECUTE FUNCTION usage_of_version();
                """),
        Migration(
            version: 2, name: "note text as bytes, tokens in the order issued",
            sql: """
                -- A note's text is kept as its UTF-8 bytes, as SQLite keeps it: PostgreSQL's TEXT
                -- cannot hold a NUL, and a note may (a file written with a hole). The usage
                -- triggers count octet_length, the same for both types.
                -- (The records trigger names the column, so it is made again around the change.)
                DROP TRIGGER usage_records ON records;
                ALTER TABLE records ALTER COLUMN body TYPE BYTEA USING convert_to(body, 'UTF8');
                ALTER TABLE versions ALTER COLUMN body TYPE BYTEA USING convert_to(body, 'UTF8');
                CREATE TRIGGER usage_records AFTER INSERT OR DELETE OR UPDATE OF body, bytes ON records
                    FOR EACH ROW EXECUTE FUNCTION usage_of_record();
                -- Tokens are listed in the order they were issued (SQLite's rowid order), also
                -- when two were issued at the same time.
                ALTER TABLE tokens ADD COLUMN issued BIGINT GENERATED ALWAYS AS IDENTITY;
                """),
        Migration(
            version: 3, name: "views of public links",
            sql: """
                ALTER TABLE shares ADD COLUMN public_views BIGINT NOT NULL DEFAULT 0;
                """),
        Migration(
            version: 4, name: "the trash, and who deleted",
            sql: """
                -- One row per deleted record until it is restored or purged; its content is its
                -- last version (versions.seq = version_seq), its history the versions with its
                -- created_seq.
                CREATE TABLE trash (
                    owner TEXT NOT NULL, zone TEXT NOT NULL, record_name TEXT NOT NULL,
                    created_seq BIGINT NOT NULL, version_seq BIGINT NOT NULL, deleted_seq BIGINT NOT NULL,
                    record_type TEXT NOT NULL, name TEXT NOT NULL, parent TEXT NOT NULL, share_id TEXT,
                    size BIGINT NOT NULL, deleted_by TEXT NOT NULL, deleted_at DOUBLE PRECISION NOT NULL,
                    PRIMARY KEY (owner, zone, record_name)
                );
                CREATE INDEX trash_by_age ON trash(deleted_at);
                """),
        Migration(
            version: 5, name: "large contents written apart",
            sql: """
                -- Note text and attachments of 4 KiB or more (SeparateContents), written in
                -- transactions of their own before the save that uses them, outside the
                -- counter's lock. A record or version then points at its row (`content_id`)
                -- and has NULL body and bytes; a version of an unchanged large content is one
                -- more pointer, not a copy.
                CREATE TABLE contents (
                    id BIGINT GENERATED BY DEFAULT AS IDENTITY PRIMARY KEY,
                    owner TEXT NOT NULL,
                    body BYTEA,
                    bytes BYTEA,
                    size BIGINT NOT NULL
                );
                -- Contents written for a modify that has not committed: its transaction takes
                -- them out of here; those of a modify that failed are deleted with their rows,
                -- and those a crash left behind by the retention pass.
                CREATE TABLE staged_contents (content_id BIGINT PRIMARY KEY, staged_at DOUBLE PRECISION NOT NULL);
                ALTER TABLE records ADD COLUMN content_id BIGINT;
                ALTER TABLE versions ADD COLUMN content_id BIGINT;
                CREATE INDEX records_by_content ON records(content_id) WHERE content_id IS NOT NULL;
                CREATE INDEX versions_by_content ON versions(content_id) WHERE content_id IS NOT NULL;

                -- A content counts toward its owner's storage once, however many records and
                -- versions point at it, from the moment it is written.
                CREATE FUNCTION usage_of_content() RETURNS trigger LANGUAGE plpgsql AS $$
                BEGIN
                    IF TG_OP = 'DELETE' THEN
                        UPDATE usage SET bytes = bytes - OLD.size WHERE owner = OLD.owner;
                    ELSE
                        INSERT INTO usage (owner, bytes) VALUES (NEW.owner, 0) ON CONFLICT (owner) DO NOTHING;
                        UPDATE usage SET bytes = bytes + NEW.size WHERE owner = NEW.owner;
                    END IF;
                    RETURN NULL;
                END $$;
                CREATE TRIGGER usage_contents AFTER INSERT OR DELETE ON contents
                    FOR EACH ROW EXECUTE FUNCTION usage_of_content();

                -- A content goes when the last record or version pointing at it does.
                CREATE FUNCTION contents_left() RETURNS trigger LANGUAGE plpgsql AS $$
                BEGIN
                    IF OLD.content_id IS NOT NULL AND (TG_OP = 'DELETE' OR OLD.content_id IS DISTINCT FROM NEW.content_id) THEN
                        DELETE FROM contents WHERE id = OLD.content_id
                          AND NOT EXISTS (SELECT 1 FROM records WHERE content_id = OLD.content_id)
                          AND NOT EXISTS (SELECT 1 FROM versions WHERE content_id = OLD.content_id);
                    END IF;
                    RETURN NULL;
                END $$;
                CREATE TRIGGER contents_left_by_records AFTER DELETE OR UPDATE OF content_id ON records
                    FOR EACH ROW EXECUTE FUNCTION contents_left();
                CREATE TRIGGER contents_left_by_versions AFTER DELETE ON versions
                    FOR EACH ROW EXECUTE FUNCTION contents_left();
                """),
        Migration(
            version: 6, name: "usage and contents kept once per statement",
            sql: """
                -- A batch of 400 saves writes its records and versions in a few statements;
                -- triggers per row then updated the owner's one usage row 800 times in the
                -- transaction, each update walking the versions of that row the ones before
                -- had left, while the batch held the change counter. Triggers per statement
                -- see the statement's rows as a table (transition tables) and write the
                -- usage once per owner.
                DROP TRIGGER usage_records ON records;
                DROP TRIGGER usage_versions ON versions;
                DROP TRIGGER contents_left_by_records ON records;
                DROP TRIGGER contents_left_by_versions ON versions;

                CREATE FUNCTION usage_add_records() RETURNS trigger LANGUAGE plpgsql AS $$
                BEGIN
                    INSERT INTO usage AS u (owner, bytes)
                        SELECT owner, SUM(COALESCE(octet_length(body), 0) + COALESCE(octet_length(bytes), 0)) FROM changed GROUP BY owner
                    ON CONFLICT (owner) DO UPDATE SET bytes = u.bytes + EXCLUDED.bytes;
                    RETURN NULL;
                END $$;
                CREATE FUNCTION usage_subtract_records() RETURNS trigger LANGUAGE plpgsql AS $$
                BEGIN
                    UPDATE usage u SET bytes = u.bytes - d.bytes
                    FROM (SELECT owner, SUM(COALESCE(octet_length(body), 0) + COALESCE(octet_length(bytes), 0)) AS bytes FROM changed GROUP BY owner) d
                    WHERE u.owner = d.owner AND d.bytes <> 0;
                    RETURN NULL;
                END $$;
                CREATE FUNCTION usage_update_records() RETURNS trigger LANGUAGE plpgsql AS $$
                BEGIN
                    INSERT INTO usage AS u (owner, bytes)
                        SELECT owner, SUM(size) FROM (
                            SELECT owner, COALESCE(octet_length(body), 0) + COALESCE(octet_length(bytes), 0) AS size FROM after
                            UNION ALL
                            SELECT owner, -(COALESCE(octet_length(body), 0) + COALESCE(octet_length(bytes), 0)) FROM before) c
                        GROUP BY owner HAVING SUM(size) <> 0
                    ON CONFLICT (owner) DO UPDATE SET bytes = u.bytes + EXCLUDED.bytes;
                    RETURN NULL;
                END $$;
                CREATE TRIGGER usage_records_insert AFTER INSERT ON records
                    REFERENCING NEW TABLE AS changed FOR EACH STATEMENT EXECUTE FUNCTION usage_add_records();
                CREATE TRIGGER usage_records_delete AFTER DELETE ON records
                    REFERENCING OLD TABLE AS changed FOR EACH STATEMENT EXECUTE FUNCTION usage_subtract_records();
                CREATE TRIGGER usage_records_update AFTER UPDATE ON records
                    REFERENCING OLD TABLE AS before NEW TABLE AS after FOR EACH STATEMENT EXECUTE FUNCTION usage_update_records();

                CREATE FUNCTION usage_add_versions() RETURNS trigger LANGUAGE plpgsql AS $$
                BEGIN
                    INSERT INTO usage AS u (owner, bytes)
                        SELECT owner, SUM(COALESCE(octet_length(body), 0)) FROM changed GROUP BY owner
                    ON CONFLICT (owner) DO UPDATE SET bytes = u.bytes + EXCLUDED.bytes;
                    RETURN NULL;
                END $$;
                CREATE FUNCTION usage_subtract_versions() RETURNS trigger LANGUAGE plpgsql AS $$
                BEGIN
                    UPDATE usage u SET bytes = u.bytes - d.bytes
                    FROM (SELECT owner, SUM(COALESCE(octet_length(body), 0)) AS bytes FROM changed GROUP BY owner) d
                    WHERE u.owner = d.owner AND d.bytes <> 0;
                    RETURN NULL;
                END $$;
                CREATE TRIGGER usage_versions_insert AFTER INSERT ON versions
                    REFERENCING NEW TABLE AS changed FOR EACH STATEMENT EXECUTE FUNCTION usage_add_versions();
                CREATE TRIGGER usage_versions_delete AFTER DELETE ON versions
                    REFERENCING OLD TABLE AS changed FOR EACH STATEMENT EXECUTE FUNCTION usage_subtract_versions();

                -- A content goes when the last record or version pointing at it does: the
                -- contents the statement's rows pointed at before it, checked once each.
                CREATE FUNCTION contents_left_by_statement() RETURNS trigger LANGUAGE plpgsql AS $$
                BEGIN
                    DELETE FROM contents c WHERE c.id IN (SELECT content_id FROM gone WHERE content_id IS NOT NULL)
                      AND NOT EXISTS (SELECT 1 FROM records WHERE content_id = c.id)
                      AND NOT EXISTS (SELECT 1 FROM versions WHERE content_id = c.id);
                    RETURN NULL;
                END $$;
                CREATE TRIGGER contents_left_by_deleted_records AFTER DELETE ON records
                    REFERENCING OLD TABLE AS gone FOR EACH STATEMENT EXECUTE FUNCTION contents_left_by_statement();
                CREATE TRIGGER contents_left_by_updated_records AFTER UPDATE ON records
                    REFERENCING OLD TABLE AS gone FOR EACH STATEMENT EXECUTE FUNCTION contents_left_by_statement();
                CREATE TRIGGER contents_left_by_deleted_versions AFTER DELETE ON versions
                    REFERENCING OLD TABLE AS gone FOR EACH STATEMENT EXECUTE FUNCTION contents_left_by_statement();
                DROP FUNCTION usage_of_record();
                DROP FUNCTION usage_of_version();
                DROP FUNCTION contents_left();

                -- A content counts toward its owner's storage from the modify that takes it
                -- (`SeparateContents.charge`), not from its writing: the writing of each group
                -- took the owner's usage row until its commit, and the modify, holding the
                -- change counter, waited for the owner's other groups. A content deleted while
                -- still staged (its modify failed) was never counted.
                DROP TRIGGER usage_contents ON contents;
                DROP FUNCTION usage_of_content();
                CREATE FUNCTION usage_of_deleted_content() RETURNS trigger LANGUAGE plpgsql AS $$
                BEGIN
                    IF NOT EXISTS (SELECT 1 FROM staged_contents WHERE content_id = OLD.id) THEN
                        UPDATE usage SET bytes = bytes - OLD.size WHERE owner = OLD.owner;
                    END IF;
                    RETURN NULL;
                END $$;
                CREATE TRIGGER usage_contents AFTER DELETE ON contents
                    FOR EACH ROW EXECUTE FUNCTION usage_of_deleted_content();
                UPDATE usage u SET bytes = u.bytes - s.size
                FROM (SELECT c.owner, SUM(c.size) AS size FROM contents c JOIN staged_contents s ON s.content_id = c.id GROUP BY c.owner) s
                WHERE u.owner = s.owner;
                """),
        Migration(
            version: 7, name: "tombstones kept 90 days",
            sql: """
                -- TombstoneRetention: the change counter marked with the store's clock at each
                -- retention pass, the last change number each zone lost to it, and an index to
                -- find the old tombstones.
                CREATE TABLE counter_marks (at DOUBLE PRECISION NOT NULL, seq BIGINT NOT NULL);
                ALTER TABLE zones ADD COLUMN pruned_seq BIGINT NOT NULL DEFAULT 0;
                CREATE INDEX tombstones_by_age ON tombstones(seq);
                """),
        Migration(
            version: 8, name: "records and versions count a row's bytes",
            sql: """
                -- StoragePolicy.rowBytes (256): each record and each kept version counts that
                -- much besides its content, so names and histories have a cost in the quota.
                CREATE OR REPLACE FUNCTION usage_add_records() RETURNS trigger LANGUAGE plpgsql AS $$
                BEGIN
                    INSERT INTO usage AS u (owner, bytes)
                        SELECT owner, SUM(256 + COALESCE(octet_length(body), 0) + COALESCE(octet_length(bytes), 0)) FROM changed GROUP BY owner
                    ON CONFLICT (owner) DO UPDATE SET bytes = u.bytes + EXCLUDED.bytes;
                    RETURN NULL;
                END $$;
                CREATE OR REPLACE FUNCTION usage_subtract_records() RETURNS trigger LANGUAGE plpgsql AS $$
                BEGIN
                    UPDATE usage u SET bytes = u.bytes - d.bytes
                    FROM (SELECT owner, SUM(256 + COALESCE(octet_length(body), 0) + COALESCE(octet_length(bytes), 0)) AS bytes FROM changed GROUP BY owner) d
                    WHERE u.owner = d.owner AND d.bytes <> 0;
                    RETURN NULL;
                END $$;
                CREATE OR REPLACE FUNCTION usage_add_versions() RETURNS trigger LANGUAGE plpgsql AS $$
                BEGIN
                    INSERT INTO usage AS u (owner, bytes)
                        SELECT owner, SUM(256 + COALESCE(octet_length(body), 0)) FROM changed GROUP BY owner
                    ON CONFLICT (owner) DO UPDATE SET bytes = u.bytes + EXCLUDED.bytes;
                    RETURN NULL;
                END $$;
                CREATE OR REPLACE FUNCTION usage_subtract_versions() RETURNS trigger LANGUAGE plpgsql AS $$
                BEGIN
                    UPDATE usage u SET bytes = u.bytes - d.bytes
                    FROM (SELECT owner, SUM(256 + COALESCE(octet_length(body), 0)) AS bytes FROM changed GROUP BY owner) d
                    WHERE u.owner = d.owner AND d.bytes <> 0;
                    RETURN NULL;
                END $$;
                UPDATE usage u SET bytes = u.bytes + 256 * (
                    (SELECT COUNT(*) FROM records r WHERE r.owner = u.owner) + (SELECT COUNT(*) FROM versions v WHERE v.owner = u.owner));
                """),
        Migration(
            version: 9, name: "restores written in turns",
            sql: """
                -- A restore under way (RestoreRules): its records carry its id until it
                -- ends, and the zone's change pages stop at since_seq meanwhile. A record
                -- keeps the id after the restore ends; only ids still listed here hide it.
                CREATE TABLE restores (
                    id TEXT PRIMARY KEY,
                    owner TEXT NOT NULL,
                    zone TEXT NOT NULL,
                    since_seq BIGINT NOT NULL,
                    started_at DOUBLE PRECISION NOT NULL
                );
                CREATE INDEX restores_by_zone ON restores (owner, zone);
                ALTER TABLE records ADD COLUMN restore_id TEXT;
                CREATE INDEX records_by_restore ON records (restore_id) WHERE restore_id IS NOT NULL;
                """),
        Migration(
            version: 10, name: "a change counter per zone",
            sql: """
                -- Change numbers count within each zone (`zones.last_seq`, taken with the
                -- zone's row lock), so writes to different zones never wait for each other.
                -- Every zone goes on from the database-wide counter, so change tags and zone
                -- tokens handed out before stay valid: each is at most its zone's number now.
                ALTER TABLE zones ADD COLUMN last_seq BIGINT NOT NULL DEFAULT 0;
                UPDATE zones SET last_seq = GREATEST(changed_seq, COALESCE((SELECT value FROM counters WHERE name = 'seq'), 0));
                -- A new zone's epoch is unique, not ordered: a sequence, which takes no lock.
                CREATE SEQUENCE zone_epochs;
                SELECT setval('zone_epochs', COALESCE((SELECT value FROM counters WHERE name = 'seq'), 0) + 1, false);

                -- Database change tokens are positions in transaction order
                -- (PostgresDatabaseToken): what changed a zone, a membership or deleted a zone
                -- notes its transaction. Rows from before count as seen by every token.
                ALTER TABLE zones ADD COLUMN changed_txn BIGINT NOT NULL DEFAULT 0;
                ALTER TABLE zones ALTER COLUMN changed_txn SET DEFAULT pg_current_xact_id()::text::bigint;
                ALTER TABLE participants ADD COLUMN changed_txn BIGINT NOT NULL DEFAULT 0;
                ALTER TABLE participants ALTER COLUMN changed_txn SET DEFAULT pg_current_xact_id()::text::bigint;
                CREATE FUNCTION participant_changed() RETURNS trigger LANGUAGE plpgsql AS $$
                BEGIN
                    NEW.changed_txn := pg_current_xact_id()::text::bigint;
                    RETURN NEW;
                END $$;
                CREATE TRIGGER participants_changed BEFORE UPDATE OF changed_seq ON participants
                    FOR EACH ROW EXECUTE FUNCTION participant_changed();
                ALTER TABLE zone_tombstones ADD COLUMN txn BIGINT NOT NULL DEFAULT 0;
                ALTER TABLE zone_tombstones ALTER COLUMN txn SET DEFAULT pg_current_xact_id()::text::bigint;

                -- Tombstones expire by their own time (change numbers no longer follow one
                -- clock across zones); those from before count from now.
                ALTER TABLE tombstones ADD COLUMN deleted_at DOUBLE PRECISION NOT NULL DEFAULT extract(epoch FROM now());
                DROP INDEX tombstones_by_age;
                CREATE INDEX tombstones_by_age ON tombstones (deleted_at);
                DROP TABLE counter_marks;

                -- Usage per zone, summed per owner when read: a save updates its own zone's
                -- row, so saves to an owner's different zones do not wait for one row. The
                -- totals so far stay in the zone '' row; contents note their zone.
                ALTER TABLE usage ADD COLUMN zone TEXT NOT NULL DEFAULT '';
                ALTER TABLE usage DROP CONSTRAINT usage_pkey;
                ALTER TABLE usage ADD PRIMARY KEY (owner, zone);
                ALTER TABLE contents ADD COLUMN zone TEXT NOT NULL DEFAULT '';
                CREATE OR REPLACE FUNCTION usage_add_records() RETURNS trigger LANGUAGE plpgsql AS $$
                BEGIN
                    INSERT INTO usage AS u (owner, zone, bytes)
                        SELECT owner, zone, SUM(256 + COALESCE(octet_length(body), 0) + COALESCE(octet_length(bytes), 0)) FROM changed GROUP BY owner, zone
                    ON CONFLICT (owner, zone) DO UPDATE SET bytes = u.bytes + EXCLUDED.bytes;
                    RETURN NULL;
                END $$;
                CREATE OR REPLACE FUNCTION usage_subtract_records() RETURNS trigger LANGUAGE plpgsql AS $$
                BEGIN
                    INSERT INTO usage AS u (owner, zone, bytes)
                        SELECT owner, zone, -SUM(256 + COALESCE(octet_length(body), 0) + COALESCE(octet_length(bytes), 0)) FROM changed GROUP BY owner, zone
                    ON CONFLICT (owner, zone) DO UPDATE SET bytes = u.bytes + EXCLUDED.bytes;
                    RETURN NULL;
                END $$;
                CREATE OR REPLACE FUNCTION usage_update_records() RETURNS trigger LANGUAGE plpgsql AS $$
                BEGIN
                    INSERT INTO usage AS u (owner, zone, bytes)
                        SELECT owner, zone, SUM(size) FROM (
                            SELECT owner, zone, COALESCE(octet_length(body), 0) + COALESCE(octet_length(bytes), 0) AS size FROM after
                            UNION ALL
                            SELECT owner, zone, -(COALESCE(octet_length(body), 0) + COALESCE(octet_length(bytes), 0)) FROM before) c
                        GROUP BY owner, zone HAVING SUM(size) <> 0
                    ON CONFLICT (owner, zone) DO UPDATE SET bytes = u.bytes + EXCLUDED.bytes;
                    RETURN NULL;
                END $$;
                CREATE OR REPLACE FUNCTION usage_add_versions() RETURNS trigger LANGUAGE plpgsql AS $$
                BEGIN
                    INSERT INTO usage AS u (owner, zone, bytes)
                        SELECT owner, zone, SUM(256 + COALESCE(octet_length(body), 0)) FROM changed GROUP BY owner, zone
                    ON CONFLICT (owner, zone) DO UPDATE SET bytes = u.bytes + EXCLUDED.bytes;
                    RETURN NULL;
                END $$;
                CREATE OR REPLACE FUNCTION usage_subtract_versions() RETURNS trigger LANGUAGE plpgsql AS $$
                BEGIN
                    INSERT INTO usage AS u (owner, zone, bytes)
                        SELECT owner, zone, -SUM(256 + COALESCE(octet_length(body), 0)) FROM changed GROUP BY owner, zone
                    ON CONFLICT (owner, zone) DO UPDATE SET bytes = u.bytes + EXCLUDED.bytes;
                    RETURN NULL;
                END $$;
                CREATE OR REPLACE FUNCTION usage_of_deleted_content() RETURNS trigger LANGUAGE plpgsql AS $$
                BEGIN
                    IF NOT EXISTS (SELECT 1 FROM staged_contents WHERE content_id = OLD.id) THEN
                        INSERT INTO usage AS u (owner, zone, bytes) VALUES (OLD.owner, OLD.zone, -OLD.size)
                        ON CONFLICT (owner, zone) DO UPDATE SET bytes = u.bytes + EXCLUDED.bytes;
                    END IF;
                    RETURN NULL;
                END $$;
                """),
        Migration(
            version: 11, name: "notes compressed with lz4",
            sql: """
                -- Note texts and files past 2 KB are compressed where they are stored
                -- (TOAST). PostgreSQL's own method (pglz) compressed a 40 KB note in
                -- milliseconds of the backend's CPU inside the modify's transaction and took
                -- 1-4 ms to read back a 4 MiB one; lz4 takes a tenth of that. Values stored
                -- before keep their method until they are written again. A server built
                -- without lz4 keeps pglz.
                DO $$
                BEGIN
                    ALTER TABLE contents ALTER COLUMN body SET COMPRESSION lz4, ALTER COLUMN bytes SET COMPRESSION lz4;
                    ALTER TABLE records ALTER COLUMN body SET COMPRESSION lz4, ALTER COLUMN bytes SET COMPRESSION lz4;
                    ALTER TABLE versions ALTER COLUMN body SET COMPRESSION lz4;
                EXCEPTION WHEN feature_not_supported THEN
                    RAISE NOTICE 'this PostgreSQL has no lz4: notes stay compressed with pglz';
                END $$;
                """),
        Migration(
            version: 12, name: "full-text search",
            sql: """
                -- Substrings through trigrams (pg_trgm, a contrib module PostgreSQL ships).
                CREATE EXTENSION IF NOT EXISTS pg_trgm;
                -- Notes whose text the search index has not yet taken in: every note
                -- written, renamed or deleted gets a row in the same transaction (the
                -- triggers below), with a new id at each write; SearchIndexer takes them in
                -- outside the writers' transactions and deletes the rows it took in.
                CREATE TABLE search_pending (
                    id BIGSERIAL PRIMARY KEY,
                    owner TEXT NOT NULL,
                    zone TEXT NOT NULL,
                    record_name TEXT NOT NULL,
                    UNIQUE (owner, zone, record_name)
                );
                CREATE INDEX search_pending_by_owner ON search_pending (owner, id);
                CREATE FUNCTION search_notes_changed() RETURNS trigger LANGUAGE plpgsql AS $$
                BEGIN
                    INSERT INTO search_pending (owner, zone, record_name)
                        SELECT owner, zone, record_name FROM changed WHERE record_type = 'note'
                    ON CONFLICT (owner, zone, record_name) DO UPDATE SET id = nextval('search_pending_id_seq');
                    RETURN NULL;
                END $$;
                CREATE TRIGGER search_records_insert AFTER INSERT ON records
                    REFERENCING NEW TABLE AS changed FOR EACH STATEMENT EXECUTE FUNCTION search_notes_changed();
                CREATE TRIGGER search_records_update AFTER UPDATE ON records
                    REFERENCING NEW TABLE AS changed FOR EACH STATEMENT EXECUTE FUNCTION search_notes_changed();
                CREATE TRIGGER search_records_delete AFTER DELETE ON records
                    REFERENCING OLD TABLE AS changed FOR EACH STATEMENT EXECUTE FUNCTION search_notes_changed();
                -- One row per note: the words of its title and text (SearchWords, made in
                -- Swift) as tsvectors, which the GIN indexes answer; results show titles and
                -- snippets from the notes themselves. pending_id: the search_pending id the row was made from, so that
                -- of two instances taking in the same note the later write wins.
                CREATE TABLE search_docs (
                    owner TEXT NOT NULL,
                    zone TEXT NOT NULL,
                    record_name TEXT NOT NULL,
                    pending_id BIGINT NOT NULL,
                    title_words TSVECTOR NOT NULL,
                    words TSVECTOR NOT NULL,
                    PRIMARY KEY (owner, zone, record_name)
                );
                CREATE INDEX search_docs_title_words ON search_docs USING gin (title_words);
                CREATE INDEX search_docs_words ON search_docs USING gin (words);
                -- Every word of three letters or more any note held; its trigrams (pg_trgm)
                -- find the words holding a string, for a search inside words.
                CREATE TABLE search_vocabulary (word TEXT PRIMARY KEY);
                CREATE INDEX search_vocabulary_trigrams ON search_vocabulary USING gin (word gin_trgm_ops);
                INSERT INTO search_pending (owner, zone, record_name) SELECT owner, zone, record_name FROM records WHERE record_type = 'note';
                """),
        Migration(
            version: 13, name: "search results newest first from the index",
            sql: """
                -- A search's matches past those ranked come most recently indexed first: for a
                -- word in most notes, the newest few are read through this index instead of
                -- every match being sorted.
                CREATE INDEX search_docs_recent ON search_docs (pending_id);
                """),
        Migration(
            version: 14, name: "a note's words with its title's",
            sql: """
                -- search_docs.words holds the title's words as well as the text's, so that a
                -- query's words and the words it excludes are one tsquery on one index: every
                -- note is taken in again.
                -- GIN adds new rows to a pending list and merges it into the index when it
                -- outgrows this limit (4 MB by default): merging more at a time writes each
                -- word's list once for more notes (indexing 60,000 notes: 10 s instead of
                -- 14.7 with the writer's work_mem as large). The indexer merges it when idle.
                ALTER INDEX search_docs_words SET (gin_pending_list_limit = 65536);
                ALTER INDEX search_docs_title_words SET (gin_pending_list_limit = 65536);
                -- Checking a phrase or ranking reads the note's words; lz4 reads faster than pglz.
                DO $$
                BEGIN
                    ALTER TABLE search_docs ALTER COLUMN words SET COMPRESSION lz4, ALTER COLUMN title_words SET COMPRESSION lz4;
                EXCEPTION WHEN feature_not_supported THEN
                    RAISE NOTICE 'this PostgreSQL has no lz4: the words stay compressed with pglz';
                END $$;
                INSERT INTO search_pending (owner, zone, record_name) SELECT owner, zone, record_name FROM records WHERE record_type = 'note'
                ON CONFLICT (owner, zone, record_name) DO UPDATE SET id = nextval('search_pending_id_seq');
                """),
        Migration(
            version: 15, name: "sign-in links",
            sql: """
                -- One-time links that become a token on the machine that opens them
                -- (SignInLinks): `id` finds the row, the secret is kept only as SHA-256.
                -- A used link keeps its row until it would have expired, so that using
                -- it again says when it was used.
                CREATE TABLE sign_in_links (
                    id TEXT PRIMARY KEY,
                    account TEXT NOT NULL REFERENCES accounts(name) ON DELETE CASCADE,
                    secret_hash BYTEA NOT NULL,
                    created_by TEXT,
                    created_at DOUBLE PRECISION NOT NULL,
                    expires_at DOUBLE PRECISION NOT NULL,
                    used_at DOUBLE PRECISION
                );
                CREATE INDEX sign_in_links_by_account ON sign_in_links(account);
                """),
    ]

    /// A migration's statements one by one (postgres-nio sends each as one prepared
    /// statement): split at semicolons outside quotes, `$$` bodies and `--` comments.
    static func statements(_ sql: String) -> [String] {
        var statements: [String] = []
        var current = ""
        var inQuote = false
        var inDollar = false
        var inComment = false
        var characters = Array(sql)[...]
        while let character = characters.popFirst() {
            if inComment {
                if character == "\n" { inComment = false }
                continue
            }
            if !inQuote && !inDollar && character == "-" && characters.first == "-" {
                inComment = true
                continue
            }
            current.append(character)
            if !inDollar && character == "'" { inQuote.toggle() }
            if !inQuote && character == "$" && characters.first == "$" {
                current.append(characters.removeFirst())
                inDollar.toggle()
            }
            if !inQuote && !inDollar && character == ";" {
                let statement = current.trimmingCharacters(in: .whitespacesAndNewlines)
                if statement != ";" { statements.append(statement) }
                current = ""
            }
        }
        let rest = current.trimmingCharacters(in: .whitespacesAndNewlines)
        if !rest.isEmpty { statements.append(rest) }
        return statements
    }

    /// The newest schema this binary knows.
    static var latest: Int { all.last?.version ?? 0 }
}
