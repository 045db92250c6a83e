public import Foundation
import GRDB
public import NotesModel
import NotesStoreRules

extension SQLiteStore {
    public func createShare(_ request: NewShare, actor: String) async throws(NotesError) -> Share {
        try ShareRules.checkRequest(request, actor: actor)
        return try await write { context in
            let db = context.db
            let zone = request.zone
            let access = try ZoneAccess.load(db, zone: zone, actor: actor)
            var members: [String] = []
            var root: NotesModel.Record?
            if let rootName = request.rootRecordName, access.zoneWideShare == nil {
                root = try StoredRecord.fetch(db, rootName, in: zone)
                if root != nil { members = [rootName] }
                if root?.recordType == .folder, root?.shareID == nil { members += try StoredRecord.descendants(db, of: rootName, in: zone) }
            }
            let title = try ShareRules.checkNewShare(request, actor: actor, access: access, root: root, members: members)
            let shares = try Int.fetchOne(db.cachedStatement(sql: "SELECT COUNT(*) FROM shares WHERE owner = ? AND stopped = 0"), arguments: [zone.owner]) ?? 0
            try self.storage.checkCount(.shares, has: shares, owner: zone.owner, actor: actor)
            if request.rootRecordName == nil {
                members = try String.fetchAll(db.cachedStatement(sql: "SELECT record_name FROM records WHERE owner = ? AND zone = ?"), arguments: [zone.owner, zone.name])
            }
            let shareID = "sh_" + SecureRandom.hex(bytes: 12)
            let seq = context.nextSeq()
            try db.cachedStatement(
                sql: """
                    INSERT INTO shares (id, owner, zone, root_record, title, public_permission, url_token, created_at)
                    VALUES (?, ?, ?, ?, ?, ?, ?, ?)
                    """
            ).execute(arguments: [
                shareID, zone.owner, zone.name, request.rootRecordName, title,
                (request.publicPermission ?? .none).rawValue, SecureRandom.token(bytes: 32), context.now.storedValue,
            ])
            try db.cachedStatement(
                sql: """
                    INSERT INTO participants (share_id, position, account, email, role, permission, status, changed_seq)
                    VALUES (?, 0, ?, NULL, 'owner', 'readWrite', 'accepted', ?)
                    """
            ).execute(arguments: [shareID, actor, seq])
            let writer = ShareWriter(context: context)
            for name in members {
                try writer.setShare(of: name, in: zone, from: nil, to: shareID)
            }
            try Self.invite(request.participants ?? [], to: shareID, owner: actor, context: context)
            try context.zoneChanged(zone)
            return try Self.loadShare(db, id: shareID)
        }
    }

    public func share(id: String, actor: String) async throws(NotesError) -> Share {
        try await read { db in
            let share = try Self.loadShare(db, id: id)
            try ShareRules.requireVisible(share, actor: actor)
            return share
        }
    }

    public func shares(actor: String) async throws(NotesError) -> [Share] {
        try await read { db in
            let ids = try String.fetchAll(
                db.cachedStatement(
                    sql: """
                        SELECT s.id FROM shares s JOIN participants p ON p.share_id = s.id
                        WHERE p.account = ? AND p.status = 'accepted' AND s.stopped = 0 ORDER BY s.created_at, s.id
                        """), arguments: [actor])
            return try ids.map { try Self.loadShare(db, id: $0) }
        }
    }

    public func invitations(actor: String) async throws(NotesError) -> [Share] {
        try await read { db in
            let ids = try String.fetchAll(
                db.cachedStatement(
                    sql: """
                        SELECT s.id FROM shares s JOIN participants p ON p.share_id = s.id
                        WHERE p.account = ? AND p.status = 'pending' AND s.stopped = 0 ORDER BY s.created_at, s.id
                        """), arguments: [actor])
            return try ids.map { try Self.loadShare(db, id: $0) }
        }
    }

    public func updateShare(id: String, _ update: ShareUpdate, actor: String) async throws(NotesError) -> Share {
        if let title = update.title { try ShareRules.validateTitle(title) }
        try update.validate()
        let password = try await LinkPasswords.newPassword(of: update)
        return try await write { context in
            let db = context.db
            let share = try Self.ownedShare(db, id: id, actor: actor)
            if let title = update.title {
                try db.cachedStatement(sql: "UPDATE shares SET title = ? WHERE id = ?").execute(arguments: [title, id])
            }
            if let permission = update.publicPermission, permission != share.publicPermission {
                try db.cachedStatement(sql: "UPDATE shares SET public_permission = ? WHERE id = ?").execute(arguments: [permission.rawValue, id])
                // Public users' access follows the public permission: expire their tokens.
                let seq = context.nextSeq()
                for participant in share.participants where participant.role == .publicUser && participant.status == .accepted {
                    guard let name = participant.name else { continue }
                    try db.cachedStatement(sql: "UPDATE participants SET changed_seq = ? WHERE share_id = ? AND account = ?").execute(arguments: [seq, id, name])
                    context.notices.insert(ChangeNotice(account: name, scope: .shared, zone: nil))
                }
            }
            if update.rotateURL == true {
                try db.cachedStatement(sql: "UPDATE shares SET url_token = ?, public_views = 0 WHERE id = ?").execute(arguments: [SecureRandom.token(bytes: 32), id])
            }
            if let seconds = update.publicExpiresIn {
                let expiry: Double? = seconds > 0 ? context.now.addingTimeInterval(seconds).storedValue : nil
                try db.cachedStatement(sql: "UPDATE shares SET public_expires_at = ? WHERE id = ?").execute(arguments: [expiry, id])
            }
            if let stored = password {
                try db.cachedStatement(sql: "UPDATE shares SET password_salt = ?, password_hash = ? WHERE id = ?")
                    .execute(arguments: [stored.map { Data($0.salt) }, stored.map { Data($0.hash) }, id])
            }
            context.notices.insert(ChangeNotice(account: actor, scope: .private, zone: share.zone))
            return try Self.loadShare(db, id: id)
        }
    }

    public func addParticipants(shareID: String, _ invitees: [Invitee], actor: String) async throws(NotesError) -> Share {
        try await write { context in
            _ = try Self.ownedShare(context.db, id: shareID, actor: actor)
            try Self.invite(invitees, to: shareID, owner: actor, context: context)
            return try Self.loadShare(context.db, id: shareID)
        }
    }

    public func removeParticipant(shareID: String, name: String, actor: String) async throws(NotesError) -> Share {
        try await write { context in
            let db = context.db
            let share = try Self.ownedShare(db, id: shareID, actor: actor)
            guard let participant = try ShareRules.participantToRemove(share, name: name, actor: actor) else { return share }
            let seq = context.nextSeq()
            try db.cachedStatement(
                sql: """
                    UPDATE participants SET status = 'removed', changed_seq = ? WHERE share_id = ? AND (account = ? OR (account IS NULL AND email = ?))
                    """
            ).execute(arguments: [seq, shareID, name, name])
            if let account = participant.name {
                context.notices.insert(ChangeNotice(account: account, scope: .shared, zone: nil))
            }
            context.notices.insert(ChangeNotice(account: actor, scope: .private, zone: share.zone))
            return try Self.loadShare(db, id: shareID)
        }
    }

    public func acceptShare(urlToken: String, password: String?, actor: String, client: String?) async throws(NotesError) -> Share {
        let verified = try await PasswordAttempts.verify(password, urlToken: urlToken, actor: actor, client: client, store: self)
        return try await write { context in
            let db = context.db
            guard
                let link = try Row.fetchOne(
                    db.cachedStatement(sql: "SELECT id, public_expires_at, password_salt, password_hash FROM shares WHERE url_token = ? AND stopped = 0"),
                    arguments: [urlToken])
            else {
                throw ShareRules.unknownLink
            }
            let id: String = link[0]
            let salt: Data? = link[2]
            let hash: Data? = link[3]
            let share = try Self.loadShare(db, id: id)
            let email = try String.fetchOne(db.cachedStatement(sql: "SELECT email FROM accounts WHERE name = ?"), arguments: [actor])
            let seq = context.nextSeq()
            let mine = ShareRules.participant(in: share, actor: actor, email: email)
            switch try ShareRules.acceptance(
                share, actor: actor, mine: mine, now: self.clock(), expiresAt: link[1], passwordHash: salt == nil ? nil : hash,
                passwordGiven: password != nil, verified: verified)
            {
            case .invitation:
                try db.cachedStatement(
                    sql: """
                        UPDATE participants SET account = ?, status = 'accepted', changed_seq = ?
                        WHERE share_id = ? AND (account = ? OR (account IS NULL AND email = ?))
                        """
                ).execute(arguments: [actor, seq, id, actor, email])
            case .publicUser(let permission, again: true):
                try db.cachedStatement(sql: "UPDATE participants SET role = 'publicUser', permission = ?, status = 'accepted', changed_seq = ? WHERE share_id = ? AND account = ?")
                    .execute(arguments: [permission.rawValue, seq, id, actor])
            case .publicUser(let permission, again: false):
                try Self.insertParticipant(db, shareID: id, account: actor, email: nil, role: .publicUser, permission: permission, status: .accepted, seq: seq)
            }
            context.notices.insert(ChangeNotice(account: actor, scope: .shared, zone: nil))
            context.notices.insert(ChangeNotice(account: share.owner, scope: .private, zone: share.zone))
            return try Self.loadShare(db, id: id)
        }
    }

    public func publicShare(urlToken: String, pass: String?) async throws(NotesError) -> (share: Share, records: [NotesModel.Record]) {
        try await read { db in
            let share = try Self.publicLink(db, urlToken: urlToken, pass: pass, now: self.clock())
            // Names and tags only: a visitor's request reads the one note it shows
            // (`publicRecord`), not the content of every note in the share.
            let records = try Row.fetchAll(
                db.cachedStatement(
                    sql: """
                        SELECT record_name, record_type, name, parent, NULL AS body, NULL AS bytes, created_at, modified_at, modified_by, seq, share_id
                        FROM records r WHERE owner = ? AND zone = ? AND share_id = ? AND \(Self.shownRecord) ORDER BY name
                        """),
                arguments: [share.zone.owner, share.zone.name, share.id]
            ).map { StoredRecord.record(fromColumns: $0, zone: share.zone) }
            return (share, records)
        }
    }

    public func publicRecord(urlToken: String, recordName: String, pass: String?) async throws(NotesError) -> NotesModel.Record {
        try await read { db in
            let share = try Self.publicLink(db, urlToken: urlToken, pass: pass, now: self.clock())
            guard let record = try StoredRecord.fetch(db, recordName, in: share.zone), record.shareID == share.id,
                !(try Self.restoring(db, in: share.zone).contains(recordName))
            else {
                throw ShareRules.noPublicPage
            }
            return record
        }
    }

    public func unlockPublicLink(urlToken: String, password: String, client: String?) async throws(NotesError) -> (pass: String, expires: Date)? {
        try await PasswordAttempts.unlock(password, urlToken: urlToken, client: client, store: self)
    }

    /// The share behind a public link that anyone may read now (with `pass`, if it has a
    /// password); otherwise the same 404 as for a token that does not exist.
    static func publicLink(_ db: Database, urlToken: String, pass: String?, now: Date) throws -> Share {
        guard
            let link = try Row.fetchOne(
                db.cachedStatement(sql: "SELECT id, public_permission, public_expires_at, password_hash FROM shares WHERE url_token = ? AND stopped = 0"),
                arguments: [urlToken])
        else { throw ShareRules.noPublicPage }
        let hash = link[3] as Data?
        let unlocked = hash.map { LinkPass.isValid(pass, urlToken: urlToken, passwordHash: $0, now: now) } ?? false
        try ShareRules.checkPublicLink(publicPermission: link[1], hasPassword: hash != nil, unlocked: unlocked, expiresAt: link[2], now: now)
        return try loadShare(db, id: link[0])
    }

    public func leaveShare(id: String, actor: String) async throws(NotesError) {
        try await write { context in
            let share = try Self.loadShare(context.db, id: id)
            try ShareRules.checkLeave(share, actor: actor)
            try context.db.cachedStatement(sql: "UPDATE participants SET status = 'removed', changed_seq = ? WHERE share_id = ? AND account = ?").execute(arguments: [
                context.nextSeq(), id, actor,
            ])
            context.notices.insert(ChangeNotice(account: actor, scope: .shared, zone: nil))
            context.notices.insert(ChangeNotice(account: share.owner, scope: .private, zone: share.zone))
        }
    }

    public func countPublicViews(_ views: [String: Int]) async throws(NotesError) {
        guard !views.isEmpty else { return }
        try await write { context in
            let statement = try context.db.cachedStatement(sql: "UPDATE shares SET public_views = public_views + ? WHERE url_token = ?")
            for (token, count) in views { try statement.execute(arguments: [count, token]) }
        }
    }

    public func stopShare(id: String, actor: String) async throws(NotesError) {
        try await write { context in
            let share = try Self.ownedShare(context.db, id: id, actor: actor)
            try ShareWriter(context: context).stop(shareID: id, zone: share.zone)
            try context.zoneChanged(share.zone)
        }
    }

    // MARK: Helpers

    /// The share, if it is active and owned by `actor`; participants get
    /// `permissionFailure`, strangers `unknownItem`.
    static func ownedShare(_ db: Database, id: String, actor: String) throws -> Share {
        let share = try loadShare(db, id: id)
        try ShareRules.requireOwner(share, actor: actor)
        return share
    }

    static func loadShare(_ db: Database, id: String) throws -> Share {
        guard let row = try Row.fetchOne(db.cachedStatement(sql: "SELECT * FROM shares WHERE id = ? AND stopped = 0"), arguments: [id]) else {
            throw ShareRules.noSuchShare(id)
        }
        let participants = try Row.fetchAll(db.cachedStatement(sql: "SELECT * FROM participants WHERE share_id = ? ORDER BY position"), arguments: [id]).map { row in
            ShareRules.participant(account: row["account"], email: row["email"], role: row["role"], permission: row["permission"], status: row["status"])
        }
        let expiresAt: Double? = row["public_expires_at"]
        let passwordHash: Data? = row["password_hash"]
        return Share(
            id: id, zone: ZoneID(owner: row["owner"], name: row["zone"]), rootRecordName: row["root_record"], title: row["title"],
            publicPermission: PublicPermission(rawValue: row["public_permission"]) ?? .none, urlToken: row["url_token"],
            participants: participants, createdAt: Date(stored: row["created_at"]),
            publicExpiresAt: expiresAt.map(Date.init(stored:)), passwordProtected: passwordHash != nil,
            publicViews: row["public_views"])
    }

    static func insertParticipant(
        _ db: Database, shareID: String, account: String?, email: String?, role: ParticipantRole,
        permission: ParticipantPermission, status: ParticipantStatus, seq: Int64
    ) throws {
        let active = try Int.fetchOne(db.cachedStatement(sql: "SELECT COUNT(*) FROM participants WHERE share_id = ? AND status != 'removed'"), arguments: [shareID]) ?? 0
        try ShareRules.checkRoom(active: active)
        let position = (try Int.fetchOne(db.cachedStatement(sql: "SELECT MAX(position) FROM participants WHERE share_id = ?"), arguments: [shareID]) ?? 0) + 1
        try db.cachedStatement(
            sql: """
                INSERT INTO participants (share_id, position, account, email, role, permission, status, changed_seq) VALUES (?, ?, ?, ?, ?, ?, ?, ?)
                """
        ).execute(arguments: [shareID, position, account, email, role.rawValue, permission.rawValue, status.rawValue, seq])
    }

    /// Adds invitees as pending participants, or changes the permission of those
    /// already in; a removed participant invited again is pending again.
    static func invite(_ invitees: [Invitee], to shareID: String, owner: String, context: WriteContext) throws {
        let db = context.db
        for invitee in invitees {
            var account: String?
            var email: String?
            if let name = invitee.name {
                guard try Bool.fetchOne(db.cachedStatement(sql: "SELECT 1 FROM accounts WHERE name = ?"), arguments: [name]) == true else {
                    throw ShareRules.unknownInvitee(name)
                }
                account = name
            } else if let address = invitee.email {
                try Names.validateEmail(address)
                email = address
                account = try String.fetchOne(db.cachedStatement(sql: "SELECT name FROM accounts WHERE email = ?"), arguments: [address])
            } else {
                throw ShareRules.inviteeNeedsNameOrEmail
            }
            try ShareRules.checkInvitee(account: account, owner: owner)
            let seq = context.nextSeq()
            let existing: Row?
            if let account {
                existing = try Row.fetchOne(db.cachedStatement(sql: "SELECT status, role FROM participants WHERE share_id = ? AND account = ?"), arguments: [shareID, account])
            } else {
                existing = try Row.fetchOne(
                    db.cachedStatement(sql: "SELECT status, role FROM participants WHERE share_id = ? AND account IS NULL AND email = ?"), arguments: [shareID, email])
            }
            if let existing {
                let newStatus = ShareRules.statusWhenInvitedAgain(existing["status"])
                try db.cachedStatement(
                    sql: """
                        UPDATE participants SET permission = ?, status = ?, role = 'privateUser', changed_seq = ?
                        WHERE share_id = ? AND ((account IS NOT NULL AND account = ?) OR (account IS NULL AND email = ?))
                        """
                ).execute(arguments: [invitee.permission.rawValue, newStatus, seq, shareID, account, email])
            } else {
                try insertParticipant(db, shareID: shareID, account: account, email: email, role: .privateUser, permission: invitee.permission, status: .pending, seq: seq)
            }
            if let account {
                context.notices.insert(ChangeNotice(account: account, scope: .shared, zone: nil))
            }
        }
    }
}
