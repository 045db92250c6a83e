import GRDB

/// The replica's schema. Like the daemon's, migrations are never edited once shipped.
enum ReplicaMigrations {
    static var migrator: DatabaseMigrator {
        var migrator = DatabaseMigrator()
        migrator.registerMigration("v1: zones, records with local state, shares, meta") { db in
            try db.execute(
                sql: """
                    -- Zones this account sees: its own (`private`) and accepted ones (`shared`).
                    -- `change_token` is where the next "changes since" starts; `pending` is a
                    -- zone creation or deletion made in the mount and not uploaded yet.
                    CREATE TABLE zones (
                        owner TEXT NOT NULL,
                        name TEXT NOT NULL,
                        scope TEXT NOT NULL,
                        change_token TEXT,
                        pending TEXT,
                        PRIMARY KEY (owner, name)
                    );

                    -- One row per record as the mount shows it. `change_tag` is the server's tag
                    -- the local state is based on (NULL: never uploaded). `dirty` orders local
                    -- changes waiting for upload (0: in sync); `deleted` marks a local delete
                    -- that the server has not seen yet. The queue of uploads is these rows,
                    -- so it survives a crash of the mount with the replica itself.
                    CREATE TABLE records (
                        owner TEXT NOT NULL,
                        zone TEXT NOT NULL,
                        record_name TEXT NOT NULL,
                        record_type TEXT NOT NULL,
                        name TEXT NOT NULL,
                        parent TEXT,
                        content BLOB,
                        size INTEGER NOT NULL DEFAULT 0,
                        share_id TEXT,
                        change_tag TEXT,
                        created_at REAL NOT NULL,
                        modified_at REAL NOT NULL,
                        modified_by TEXT NOT NULL,
                        dirty INTEGER NOT NULL DEFAULT 0,
                        deleted INTEGER NOT NULL DEFAULT 0,
                        PRIMARY KEY (owner, zone, record_name)
                    );
                    CREATE INDEX records_dirty ON records(dirty) WHERE dirty > 0;

                    -- Shares this account owns or accepted, as the daemon described them (JSON).
                    CREATE TABLE shares (id TEXT PRIMARY KEY, json BLOB NOT NULL);

                    -- Database change tokens and the account the replica belongs to.
                    CREATE TABLE meta (key TEXT PRIMARY KEY, value TEXT NOT NULL);
                    """)
        }
        migrator.registerMigration("v2: conflict copies") { db in
            try db.execute(
                sql: """
                    -- Copies the mount made of local edits that could not be merged with someone
                    -- else's (or could no longer be saved where they were): `notes status` lists
                    -- them until the copy is deleted. `path` is where the mount showed it.
                    CREATE TABLE conflicts (
                        owner TEXT NOT NULL,
                        zone TEXT NOT NULL,
                        record_name TEXT NOT NULL,
                        path TEXT NOT NULL,
                        note_name TEXT NOT NULL,
                        created_at REAL NOT NULL,
                        PRIMARY KEY (owner, zone, record_name)
                    );
                    """)
        }
        migrator.registerMigration("v3: refusals") { db in
            try db.execute(
                sql: """
                    -- Why notesd refused a queued change that the mount could not settle by itself
                    -- (NULL while it only waits): `notes status` shows it. A new local change or
                    -- the server's acceptance clears it.
                    ALTER TABLE records ADD COLUMN refusal TEXT;
                    """)
        }
        migrator.registerMigration("v4: what the last upload sent") { db in
            try db.execute(
                sql: """
                    -- SHA-256 of the content an upload was about to send: when its answer is lost
                    -- (the mount stopped, the connection dropped after notesd committed), the
                    -- version it left on notesd is then known as this mount's own, not another's.
                    ALTER TABLE records ADD COLUMN sent_digest BLOB;
                    """)
        }
        migrator.registerMigration("v5: notes waiting for the search index") { db in
            try db.execute(
                sql: """
                    -- Notes written since the local search index (a file of its own beside this
                    -- one) took them in: one row per note, its id growing with each write, made
                    -- by triggers in the same transaction as the write, so no path that writes a
                    -- note is missed. The index deletes the rows it took in. (A row is deleted and
                    -- made anew rather than replaced: the replica's upserts would carry their own
                    -- conflict rule into a trigger's INSERT OR REPLACE and fail on the second write.)
                    CREATE TABLE search_pending (
                        id INTEGER PRIMARY KEY AUTOINCREMENT,
                        owner TEXT NOT NULL,
                        zone TEXT NOT NULL,
                        record_name TEXT NOT NULL,
                        UNIQUE (owner, zone, record_name)
                    );
                    CREATE TRIGGER records_search_insert AFTER INSERT ON records WHEN NEW.record_type = 'note' BEGIN
                        DELETE FROM search_pending WHERE owner = NEW.owner AND zone = NEW.zone AND record_name = NEW.record_name;
                        INSERT INTO search_pending (owner, zone, record_name) VALUES (NEW.owner, NEW.zone, NEW.record_name);
                    END;
                    -- Only what the index reads: the text, the name, a delete (an upload's answer
                    -- changes the tag and times alone).
                    CREATE TRIGGER records_search_update AFTER UPDATE ON records
                    WHEN (NEW.record_type = 'note' OR OLD.record_type = 'note')
                        AND (NEW.content IS NOT OLD.content OR NEW.name IS NOT OLD.name OR NEW.deleted IS NOT OLD.deleted
                             OR NEW.record_type IS NOT OLD.record_type)
                    BEGIN
                        DELETE FROM search_pending WHERE owner = NEW.owner AND zone = NEW.zone AND record_name = NEW.record_name;
                        INSERT INTO search_pending (owner, zone, record_name) VALUES (NEW.owner, NEW.zone, NEW.record_name);
                    END;
                    CREATE TRIGGER records_search_delete AFTER DELETE ON records WHEN OLD.record_type = 'note' BEGIN
                        DELETE FROM search_pending WHERE owner = OLD.owner AND zone = OLD.zone AND record_name = OLD.record_name;
                        INSERT INTO search_pending (owner, zone, record_name) VALUES (OLD.owner, OLD.zone, OLD.record_name);
                    END;
                    INSERT INTO search_pending (owner, zone, record_name)
                        SELECT owner, zone, record_name FROM records WHERE record_type = 'note' AND deleted = 0;
                    """)
        }
        return migrator
    }
}
