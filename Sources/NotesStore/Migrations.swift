import GRDB

/// The schema, one migration per shipped change. Migrations are never edited once
/// shipped and never use app types, so an old database always upgrades the same way.
enum Migrations {
    static var migrator: DatabaseMigrator {
        var migrator = DatabaseMigrator()
        migrator.registerMigration("v1: accounts, zones, records, shares") { db in
            try db.execute(
                sql: """
                    -- A single global change sequence: every record save or delete takes the
                    -- next value, which is also the record's change tag. Zone and database
                    -- change tokens are positions in this sequence.
                    CREATE TABLE counters (name TEXT PRIMARY KEY, value INTEGER NOT NULL);
                    INSERT INTO counters (name, value) VALUES ('seq', 0);

                    CREATE TABLE accounts (
                        name TEXT PRIMARY KEY,
                        email TEXT UNIQUE,
                        is_admin INTEGER NOT NULL DEFAULT 0,
                        created_at REAL NOT NULL
                    );

                    -- Bearer tokens: `id` finds the row, the secret is kept only as SHA-256.
                    CREATE TABLE tokens (
                        id TEXT PRIMARY KEY,
                        account TEXT NOT NULL REFERENCES accounts(name) ON DELETE CASCADE,
                        secret_hash BLOB NOT NULL,
                        created_at REAL NOT NULL,
                        expires_at REAL
                    );

                    -- `epoch` is the seq at creation: a token from an earlier zone of the
                    -- same name expires. `changed_seq` feeds database-scope changes.
                    CREATE TABLE zones (
                        owner TEXT NOT NULL REFERENCES accounts(name),
                        name TEXT NOT NULL,
                        epoch INTEGER NOT NULL,
                        changed_seq INTEGER NOT NULL,
                        PRIMARY KEY (owner, name)
                    );
                    CREATE TABLE zone_tombstones (owner TEXT NOT NULL, name TEXT NOT NULL, seq INTEGER NOT NULL);
                    CREATE INDEX zone_tombstones_by_seq ON zone_tombstones(owner, seq);

                    -- `parent` is '' at the zone's root so that the unique index also
                    -- covers root-level names (NULLs would never collide). `share_id` is
                    -- the share covering the record, kept on every record of the share so
                    -- that a participant's view is one indexed lookup.
                    CREATE TABLE records (
                        owner TEXT NOT NULL,
                        zone TEXT NOT NULL,
                        record_name TEXT NOT NULL,
                        record_type TEXT NOT NULL,
                        name TEXT NOT NULL,
                        parent TEXT NOT NULL DEFAULT '',
                        body TEXT,
                        bytes BLOB,
                        created_at REAL NOT NULL,
                        modified_at REAL NOT NULL,
                        modified_by TEXT NOT NULL,
                        seq INTEGER NOT NULL,
                        share_id TEXT,
                        PRIMARY KEY (owner, zone, record_name),
                        FOREIGN KEY (owner, zone) REFERENCES zones(owner, name) ON DELETE CASCADE
                    );
                    CREATE UNIQUE INDEX records_by_path ON records(owner, zone, parent, name);
                    CREATE INDEX records_by_seq ON records(owner, zone, seq);
                    CREATE INDEX records_by_share ON records(share_id, seq) WHERE share_id IS NOT NULL;

                    -- kind 'deleted': the record is gone. kind 'left': it moved out of the
                    -- share `share_id`, so that share's participants must drop it.
                    CREATE TABLE tombstones (
                        owner TEXT NOT NULL,
                        zone TEXT NOT NULL,
                        record_name TEXT NOT NULL,
                        seq INTEGER NOT NULL,
                        share_id TEXT,
                        kind TEXT NOT NULL
                    );
                    CREATE INDEX tombstones_by_seq ON tombstones(owner, zone, seq);
                    CREATE INDEX tombstones_by_share ON tombstones(share_id, seq) WHERE share_id IS NOT NULL;

                    -- Every earlier state of a record (the current one lives in records):
                    -- a save or delete first copies the row here. History now, three-way
                    -- merge later.
                    CREATE TABLE versions (
                        owner TEXT NOT NULL,
                        zone TEXT NOT NULL,
                        record_name TEXT NOT NULL,
                        seq INTEGER NOT NULL,
                        name TEXT NOT NULL,
                        parent TEXT NOT NULL,
                        body TEXT,
                        size INTEGER NOT NULL,
                        modified_by TEXT NOT NULL,
                        modified_at REAL NOT NULL
                    );
                    CREATE INDEX versions_by_record ON versions(owner, zone, record_name, seq);

                    -- A stopped share keeps its row (and its participants, all 'removed')
                    -- so that participants' database changes can report the zone gone.
                    CREATE TABLE shares (
                        id TEXT PRIMARY KEY,
                        owner TEXT NOT NULL,
                        zone TEXT NOT NULL,
                        root_record TEXT,
                        title TEXT NOT NULL,
                        public_permission TEXT NOT NULL,
                        url_token TEXT NOT NULL UNIQUE,
                        created_at REAL NOT NULL,
                        stopped INTEGER NOT NULL DEFAULT 0
                    );
                    CREATE INDEX shares_by_zone ON shares(owner, zone) WHERE stopped = 0;

                    -- `account` is NULL while an email invitation has no account yet.
                    CREATE TABLE participants (
                        share_id TEXT NOT NULL REFERENCES shares(id),
                        position INTEGER NOT NULL,
                        account TEXT,
                        email TEXT,
                        role TEXT NOT NULL,
                        permission TEXT NOT NULL,
                        status TEXT NOT NULL,
                        changed_seq INTEGER NOT NULL,
                        PRIMARY KEY (share_id, position)
                    );
                    CREATE UNIQUE INDEX participants_by_account ON participants(share_id, account);
                    CREATE INDEX participants_of_account ON participants(account, status);
                    CREATE INDEX participants_by_email ON participants(email) WHERE account IS NULL;
                    """)
        }
        migrator.registerMigration("v2: public link expiry and password") { db in
            try db.execute(
                sql: """
                    -- The public link lets new people in until `public_expires_at` (NULL: no end),
                    -- and only with the password whose PBKDF2-SHA256 hash and salt are kept here.
                    ALTER TABLE shares ADD COLUMN public_expires_at REAL;
                    ALTER TABLE shares ADD COLUMN password_salt BLOB;
                    ALTER TABLE shares ADD COLUMN password_hash BLOB;
                    """)
        }
        migrator.registerMigration("v3: a record's history belongs to that record") { db in
            try db.execute(
                sql: """
                    -- A record name can be used again once its record is deleted; each use is a
                    -- new record whose history starts empty. `created_seq`, the sequence number
                    -- of the save that created it, tells the uses apart in `versions`, so a
                    -- record made under a deleted one's name never reads that one's history.
                    ALTER TABLE records ADD COLUMN created_seq INTEGER NOT NULL DEFAULT 0;
                    ALTER TABLE versions ADD COLUMN created_seq INTEGER NOT NULL DEFAULT 0;
                    -- Rows from before: versions older than the record now holding the name
                    -- belong to an earlier use of it.
                    UPDATE versions SET created_seq = -1 WHERE modified_at < (
                        SELECT r.created_at FROM records r
                        WHERE r.owner = versions.owner AND r.zone = versions.zone AND r.record_name = versions.record_name);
                    DROP INDEX versions_by_record;
                    CREATE INDEX versions_by_record ON versions(owner, zone, record_name, created_seq, seq);
                    """)
        }
        migrator.registerMigration("v4: token labels, disabled accounts") { db in
            try db.execute(
                sql: """
                    -- What a token is for, as its owner named it; revoking a token deletes its row.
                    ALTER TABLE tokens ADD COLUMN label TEXT;
                    CREATE INDEX tokens_by_account ON tokens(account);
                    -- A disabled account is refused on every request until enabled again.
                    ALTER TABLE accounts ADD COLUMN disabled_at REAL;
                    """)
        }
        migrator.registerMigration("v5: wrong link passwords, counted") { db in
            try db.execute(
                sql: """
                    -- Wrong link passwords per `link:<share>` and `client:<address>` in the
                    -- current window (see PasswordAttempts); rows of old windows are deleted.
                    CREATE TABLE password_attempts (
                        key TEXT PRIMARY KEY,
                        window_start REAL NOT NULL,
                        failures INTEGER NOT NULL
                    );
                    """)
        }
        migrator.registerMigration("v6: storage used per account") { db in
            try db.execute(
                sql: """
                    -- Bytes each account's zones hold: note text and attachments of records,
                    -- and the text of kept versions. Triggers keep it exact on every write,
                    -- whatever the path, so the quota check reads one row.
                    CREATE TABLE usage (
                        owner TEXT PRIMARY KEY,
                        bytes INTEGER NOT NULL DEFAULT 0
                    );
                    INSERT INTO usage (owner, bytes)
                    SELECT name,
                        (SELECT COALESCE(SUM(COALESCE(length(CAST(body AS BLOB)), 0) + COALESCE(length(bytes), 0)), 0) FROM records WHERE owner = accounts.name)
                      + (SELECT COALESCE(SUM(COALESCE(length(CAST(body AS BLOB)), 0)), 0) FROM versions WHERE owner = accounts.name)
                    FROM accounts;
                    CREATE TRIGGER usage_record_insert AFTER INSERT ON records BEGIN
                        INSERT OR IGNORE INTO usage (owner, bytes) VALUES (NEW.owner, 0);
                        UPDATE usage SET bytes = bytes + COALESCE(length(CAST(NEW.body AS BLOB)), 0) + COALESCE(length(NEW.bytes), 0) WHERE owner = NEW.owner;
                    END;
                    CREATE TRIGGER usage_record_update AFTER UPDATE OF body, bytes ON records BEGIN
                        UPDATE usage SET bytes = bytes
                            - COALESCE(length(CAST(OLD.body AS BLOB)), 0) - COALESCE(length(OLD.bytes), 0)
                            + COALESCE(length(CAST(NEW.body AS BLOB)), 0) + COALESCE(length(NEW.bytes), 0)
                        WHERE owner = NEW.owner;
                    END;
                    CREATE TRIGGER usage_record_delete AFTER DELETE ON records BEGIN
                        UPDATE usage SET bytes = bytes - COALESCE(length(CAST(OLD.body AS BLOB)), 0) - COALESCE(length(OLD.bytes), 0) WHERE owner = OLD.owner;
                    END;
                    CREATE TRIGGER usage_version_insert AFTER INSERT ON versions BEGIN
                        INSERT OR IGNORE INTO usage (owner, bytes) VALUES (NEW.owner, 0);
                        UPDATE usage SET bytes = bytes + COALESCE(length(CAST(NEW.body AS BLOB)), 0) WHERE owner = NEW.owner;
                    END;
                    CREATE TRIGGER usage_version_delete AFTER DELETE ON versions BEGIN
                        UPDATE usage SET bytes = bytes - COALESCE(length(CAST(OLD.body AS BLOB)), 0) WHERE owner = OLD.owner;
                    END;
                    -- Retention walks versions by age.
                    CREATE INDEX versions_by_age ON versions(modified_at);
                    """)
        }
        migrator.registerMigration("v7: views of public links") { db in
            try db.execute(sql: "ALTER TABLE shares ADD COLUMN public_views INTEGER NOT NULL DEFAULT 0")
        }
        migrator.registerMigration("v8: the trash, and who deleted") { db in
            try db.execute(
                sql: """
                    -- One row per deleted record until it is restored or purged; its content is
                    -- its last version (versions.seq = version_seq), its history the versions
                    -- with its created_seq.
                    CREATE TABLE trash (
                        owner TEXT NOT NULL, zone TEXT NOT NULL, record_name TEXT NOT NULL,
                        created_seq INTEGER NOT NULL, version_seq INTEGER NOT NULL, deleted_seq INTEGER NOT NULL,
                        record_type TEXT NOT NULL, name TEXT NOT NULL, parent TEXT NOT NULL, share_id TEXT,
                        size INTEGER NOT NULL, deleted_by TEXT NOT NULL, deleted_at REAL NOT NULL,
                        PRIMARY KEY (owner, zone, record_name)
                    );
                    CREATE INDEX trash_by_age ON trash(deleted_at);
                    """)
        }
        migrator.registerMigration("v9: large contents written apart") { db in
            try db.execute(
                sql: """
                    -- Note text and attachments of 4 KiB or more (SeparateContents), written in
                    -- transactions of their own before the save that uses them. A record or
                    -- version then points at its row (`content_id`) and has NULL body and bytes;
                    -- a version of an unchanged large content is one more pointer, not a copy.
                    CREATE TABLE contents (
                        id INTEGER PRIMARY KEY,
                        owner TEXT NOT NULL,
                        body BLOB,
                        bytes BLOB,
                        size INTEGER NOT NULL
                    );
                    -- Contents written for a modify that has not committed: its transaction takes
                    -- them out of here; those of a modify that failed are deleted with their
                    -- rows, and those a crash left behind when notesd starts.
                    CREATE TABLE staged_contents (content_id INTEGER PRIMARY KEY, staged_at REAL NOT NULL);
                    ALTER TABLE records ADD COLUMN content_id INTEGER;
                    ALTER TABLE versions ADD COLUMN content_id INTEGER;
                    CREATE INDEX records_by_content ON records(content_id) WHERE content_id IS NOT NULL;
                    CREATE INDEX versions_by_content ON versions(content_id) WHERE content_id IS NOT NULL;

                    -- A content counts toward its owner's storage once, however many records
                    -- and versions point at it, from the moment it is written.
                    CREATE TRIGGER usage_content_insert AFTER INSERT ON contents BEGIN
                        INSERT OR IGNORE INTO usage (owner, bytes) VALUES (NEW.owner, 0);
                        UPDATE usage SET bytes = bytes + NEW.size WHERE owner = NEW.owner;
                    END;
                    CREATE TRIGGER usage_content_delete AFTER DELETE ON contents BEGIN
                        UPDATE usage SET bytes = bytes - OLD.size WHERE owner = OLD.owner;
                    END;

                    -- A content goes when the last record or version pointing at it does.
                    CREATE TRIGGER contents_left_by_record_update AFTER UPDATE OF content_id ON records
                    WHEN OLD.content_id IS NOT NULL AND OLD.content_id IS NOT NEW.content_id BEGIN
                        DELETE FROM contents WHERE id = OLD.content_id
                          AND NOT EXISTS (SELECT 1 FROM records WHERE content_id = OLD.content_id)
                          AND NOT EXISTS (SELECT 1 FROM versions WHERE content_id = OLD.content_id);
                    END;
                    CREATE TRIGGER contents_left_by_record_delete AFTER DELETE ON records WHEN OLD.content_id IS NOT NULL BEGIN
                        DELETE FROM contents WHERE id = OLD.content_id
                          AND NOT EXISTS (SELECT 1 FROM records WHERE content_id = OLD.content_id)
                          AND NOT EXISTS (SELECT 1 FROM versions WHERE content_id = OLD.content_id);
                    END;
                    CREATE TRIGGER contents_left_by_version_delete AFTER DELETE ON versions WHEN OLD.content_id IS NOT NULL BEGIN
                        DELETE FROM contents WHERE id = OLD.content_id
                          AND NOT EXISTS (SELECT 1 FROM records WHERE content_id = OLD.content_id)
                          AND NOT EXISTS (SELECT 1 FROM versions WHERE content_id = OLD.content_id);
                    END;
                    """)
        }
        migrator.registerMigration("v10: contents count from the modify that takes them") { db in
            try db.execute(
                sql: """
                    -- A content counts toward its owner's storage from the modify that takes it
                    -- (`SeparateContents.charge`), not from its writing: on PostgreSQL the
                    -- writing of each group then took the owner's usage row, and the modify,
                    -- holding the change counter, waited for the owner's other groups. Both
                    -- stores keep the same rule. A content deleted while still staged (its modify
                    -- failed) was never counted.
                    DROP TRIGGER usage_content_insert;
                    DROP TRIGGER usage_content_delete;
                    CREATE TRIGGER usage_content_delete AFTER DELETE ON contents
                    WHEN NOT EXISTS (SELECT 1 FROM staged_contents WHERE content_id = OLD.id) BEGIN
                        UPDATE usage SET bytes = bytes - OLD.size WHERE owner = OLD.owner;
                    END;
                    UPDATE usage SET bytes = bytes - COALESCE((
                        SELECT SUM(c.size) FROM contents c JOIN staged_contents s ON s.content_id = c.id WHERE c.owner = usage.owner), 0);
                    """)
        }
        migrator.registerMigration("v11: tombstones kept 90 days") { db in
            try db.execute(
                sql: """
                    -- TombstoneRetention: the change counter marked with the store's clock at each
                    -- retention pass, the last change number each zone lost to it, and an index
                    -- to find the old tombstones.
                    CREATE TABLE counter_marks (at REAL NOT NULL, seq INTEGER NOT NULL);
                    ALTER TABLE zones ADD COLUMN pruned_seq INTEGER NOT NULL DEFAULT 0;
                    CREATE INDEX tombstones_by_age ON tombstones(seq);
                    """)
        }
        migrator.registerMigration("v12: records and versions count a row's bytes") { db in
            try db.execute(
                sql: """
                    -- StoragePolicy.rowBytes (256): each record and each kept version counts that
                    -- much besides its content, so names and histories have a cost in the quota.
                    DROP TRIGGER usage_record_insert;
                    DROP TRIGGER usage_record_delete;
                    DROP TRIGGER usage_version_insert;
                    DROP TRIGGER usage_version_delete;
                    CREATE TRIGGER usage_record_insert AFTER INSERT ON records BEGIN
                        INSERT OR IGNORE INTO usage (owner, bytes) VALUES (NEW.owner, 0);
                        UPDATE usage SET bytes = bytes + 256 + COALESCE(length(CAST(NEW.body AS BLOB)), 0) + COALESCE(length(NEW.bytes), 0) WHERE owner = NEW.owner;
                    END;
                    CREATE TRIGGER usage_record_delete AFTER DELETE ON records BEGIN
                        UPDATE usage SET bytes = bytes - 256 - COALESCE(length(CAST(OLD.body AS BLOB)), 0) - COALESCE(length(OLD.bytes), 0) WHERE owner = OLD.owner;
                    END;
                    CREATE TRIGGER usage_version_insert AFTER INSERT ON versions BEGIN
                        INSERT OR IGNORE INTO usage (owner, bytes) VALUES (NEW.owner, 0);
                        UPDATE usage SET bytes = bytes + 256 + COALESCE(length(CAST(NEW.body AS BLOB)), 0) WHERE owner = NEW.owner;
                    END;
                    CREATE TRIGGER usage_version_delete AFTER DELETE ON versions BEGIN
                        UPDATE usage SET bytes = bytes - 256 - COALESCE(length(CAST(OLD.body AS BLOB)), 0) WHERE owner = OLD.owner;
                    END;
                    UPDATE usage SET bytes = bytes + 256 * (
                        (SELECT COUNT(*) FROM records WHERE owner = usage.owner) + (SELECT COUNT(*) FROM versions WHERE owner = usage.owner));
                    """)
        }
        migrator.registerMigration("v13: restores written in turns") { db in
            try db.execute(
                sql: """
                    -- A restore under way (RestoreRules): its records carry its id until it
                    -- ends, and the zone's change pages stop at since_seq meanwhile. A
                    -- record keeps the id after the restore ends; only ids still listed
                    -- here hide a record.
                    CREATE TABLE restores (
                        id TEXT PRIMARY KEY,
                        owner TEXT NOT NULL,
                        zone TEXT NOT NULL,
                        since_seq INTEGER NOT NULL,
                        started_at REAL NOT NULL
                    );
                    CREATE INDEX restores_by_zone ON restores (owner, zone);
                    ALTER TABLE records ADD COLUMN restore_id TEXT;
                    CREATE INDEX records_by_restore ON records (restore_id) WHERE restore_id IS NOT NULL;
                    """)
        }
        migrator.registerMigration("v14: a content's size read without its content") { db in
            try db.execute(
                sql: """
                    -- A row's columns are read in order, and a content's size comes after its
                    -- body: reading the size of a 40 KB note walked its 10 overflow pages. A
                    -- version kept for each save of a batch read 16 MB that way, inside the
                    -- writer's transaction. This index holds the size beside the id.
                    CREATE INDEX contents_sizes ON contents (id, size);
                    """)
        }
        migrator.registerMigration("v15: notes waiting for the search index") { db in
            try db.execute(
                sql: """
                    -- Notes whose text the search index (a database file of its own, see
                    -- SQLiteSearchIndex) has not yet taken in: every note written, renamed
                    -- or deleted by any path gets a row here in the same transaction, with
                    -- an id that only grows. The index keeps the last id it took in;
                    -- rows up to it are deleted from time to time.
                    CREATE TABLE search_pending (
                        id INTEGER PRIMARY KEY AUTOINCREMENT,
                        owner TEXT NOT NULL,
                        zone TEXT NOT NULL,
                        record_name TEXT NOT NULL,
                        UNIQUE (owner, zone, record_name)
                    );
                    CREATE INDEX search_pending_by_owner ON search_pending (owner, id);
                    CREATE TRIGGER search_note_insert AFTER INSERT ON records WHEN NEW.record_type = 'note' BEGIN
                        INSERT OR REPLACE INTO search_pending (owner, zone, record_name) VALUES (NEW.owner, NEW.zone, NEW.record_name);
                    END;
                    CREATE TRIGGER search_note_update AFTER UPDATE OF body, content_id, name, record_type ON records
                    WHEN NEW.record_type = 'note' OR OLD.record_type = 'note' BEGIN
                        INSERT OR REPLACE INTO search_pending (owner, zone, record_name) VALUES (NEW.owner, NEW.zone, NEW.record_name);
                    END;
                    CREATE TRIGGER search_note_delete AFTER DELETE ON records WHEN OLD.record_type = 'note' BEGIN
                        INSERT OR REPLACE INTO search_pending (owner, zone, record_name) VALUES (OLD.owner, OLD.zone, OLD.record_name);
                    END;
                    INSERT INTO search_pending (owner, zone, record_name) SELECT owner, zone, record_name FROM records WHERE record_type = 'note';
                    """)
        }
        migrator.registerMigration("v16: sign-in links") { db in
            try db.execute(
                sql: """
                    -- One-time links that become a token on the machine that opens them
                    -- (SignInLinks): `id` finds the row, the secret is kept only as SHA-256.
                    -- A used link keeps its row until it would have expired, so that using
                    -- it again says when it was used.
                    CREATE TABLE sign_in_links (
                        id TEXT PRIMARY KEY,
                        account TEXT NOT NULL REFERENCES accounts(name) ON DELETE CASCADE,
                        secret_hash BLOB NOT NULL,
                        created_by TEXT,
                        created_at REAL NOT NULL,
                        expires_at REAL NOT NULL,
                        used_at REAL
                    );
                    CREATE INDEX sign_in_links_by_account ON sign_in_links(account);
                    """)
        }
        return migrator
    }
}
