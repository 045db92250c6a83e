import Foundation
import GRDB
public import NotesModel

extension SQLiteStore {
    public func createShare(_ request: NewShare, actor: String) async throws(NotesError) -> Share {
        guard request.zone.owner == actor else {
            throw NotesError(.permissionFailure, "Only the owner of a note can share it; you can share only what is under private/.")
        }
        if let title = request.title { try Self.validateTitle(title) }
        return try await write { context in
            let db = context.db
            let zone = request.zone
            let access = try ZoneAccess.load(db, zone: zone, actor: actor)
            if let existing = access.zoneWideShare {
                throw NotesError(.alreadyShared, "The whole zone \(zone.name) is already shared (share \(existing)); change that share instead.")
            }
            var members: [String]
            let title: String
            if let rootName = request.rootRecordName {
                guard let root = try StoredRecord.fetch(db, rootName, in: zone) else {
                    throw NotesError(.unknownItem, "There is no record \(rootName) in \(zone.name) to share.")
                }
                if let covering = root.shareID {
                    throw NotesError(.alreadyShared, "“\(root.name)” is already shared (share \(covering)); add participants to that share instead.")
                }
                members = [rootName] + (root.recordType == .folder ? try StoredRecord.descendants(db, of: rootName, in: zone) : [])
                if let nested = members.first(where: { access.rootShares[$0] != nil }), let nestedShare = access.rootShares[nested] {
                    throw NotesError(.alreadyShared, "“\(root.name)” holds a record that is already shared (share \(nestedShare)); shares cannot nest.")
                }
                title = request.title ?? root.name
            } else {
                if let other = access.rootShares.values.sorted().first {
                    throw NotesError(.alreadyShared, "Part of the zone \(zone.name) is already shared (share \(other)); stop that share before sharing the whole zone.")
                }
                members = try String.fetchAll(db.cachedStatement(sql: "SELECT record_name FROM records WHERE owner = ? AND zone = ?"), arguments: [zone.owner, zone.name])
                title = request.title ?? (zone.isDefault ? "\(actor)'s notes" : zone.name)
            }
            let shareID = "sh_" + SecureRandom.hex(bytes: 12)
            let seq = context.nextSeq()
            try db.cachedStatement(sql: """
                INSERT INTO shares (id, owner, zone, root_record, title, public_permission, url_token, created_at)
                VALUES (?, ?, ?, ?, ?, ?, ?, ?)
                """).execute(arguments: [shareID, zone.owner, zone.name, request.rootRecordName, title,
                                 (request.publicPermission ?? .none).rawValue, SecureRandom.token(bytes: 32), context.now.storedValue])
            try db.cachedStatement(sql: """
                INSERT INTO participants (share_id, position, account, email, role, permission, status, changed_seq)
                VALUES (?, 0, ?, NULL, 'owner', 'readWrite', 'accepted', ?)
                """).execute(arguments: [shareID, actor, seq])
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
            guard share.owner == actor || share.participant(named: actor).map({ $0.status != .removed }) == true else {
                throw Self.noSuchShare(id)
            }
            return share
        }
    }

    public func shares(actor: String) async throws(NotesError) -> [Share] {
        try await read { db in
            let ids = try String.fetchAll(db.cachedStatement(sql: """
                SELECT s.id FROM shares s JOIN participants p ON p.share_id = s.id
                WHERE p.account = ? AND p.status = 'accepted' AND s.stopped = 0 ORDER BY s.created_at, s.id
                """), arguments: [actor])
            return try ids.map { try Self.loadShare(db, id: $0) }
        }
    }

    public func invitations(actor: String) async throws(NotesError) -> [Share] {
        try await read { db in
            let ids = try String.fetchAll(db.cachedStatement(sql: """
                SELECT s.id FROM shares s JOIN participants p ON p.share_id = s.id
                WHERE p.account = ? AND p.status = 'pending' AND s.stopped = 0 ORDER BY s.created_at, s.id
                """), arguments: [actor])
            return try ids.map { try Self.loadShare(db, id: $0) }
        }
    }

    public func updateShare(id: String, _ update: ShareUpdate, actor: String) async throws(NotesError) -> Share {
        if let title = update.title { try Self.validateTitle(title) }
        try update.validate()
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
                try db.cachedStatement(sql: "UPDATE shares SET url_token = ? WHERE id = ?").execute(arguments: [SecureRandom.token(bytes: 32), id])
            }
            if let seconds = update.publicExpiresIn {
                let expiry: Double? = seconds > 0 ? context.now.addingTimeInterval(seconds).storedValue : nil
                try db.cachedStatement(sql: "UPDATE shares SET public_expires_at = ? WHERE id = ?").execute(arguments: [expiry, id])
            }
            if let password = update.publicPassword {
                let stored = password.isEmpty ? nil : try LinkPasswords.hash(password)
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
            guard name != actor else {
                throw NotesError(.invalidArguments, "You own this share; to stop sharing with everyone, run `notes unshare` without --with.")
            }
            guard let participant = share.participants.first(where: { $0.name == name || ($0.name == nil && $0.email == name) }),
                  participant.status != .removed
            else {
                throw NotesError(.unknownItem, "\(name) is not a participant of this share.")
            }
            let seq = context.nextSeq()
            try db.cachedStatement(sql: """
                UPDATE participants SET status = 'removed', changed_seq = ? WHERE share_id = ? AND (account = ? OR (account IS NULL AND email = ?))
                """).execute(arguments: [seq, shareID, name, name])
            if let account = participant.name {
                context.notices.insert(ChangeNotice(account: account, scope: .shared, zone: nil))
            }
            context.notices.insert(ChangeNotice(account: actor, scope: .private, zone: share.zone))
            return try Self.loadShare(db, id: shareID)
        }
    }

    public func acceptShare(urlToken: String, password: String?, actor: String, client: String?) async throws(NotesError) -> Share {
        if let password, password.utf8.count > 1024 { throw NotesError(.invalidArguments, "The password is longer than 1,024 bytes.") }
        // A password is checked before the write: the count of wrong guesses first (429
        // once over it), then PBKDF2 on a thread of its own, so that guessing holds
        // neither the writer nor a thread of the server. The write then only compares
        // the hash it checked against with the one stored (a changed password: retry).
        var checkedHash: Data?
        if let password, let guarded = try await passwordOfLink(urlToken) {
            let keys = PasswordAttempts.keys(shareID: guarded.shareID, client: client ?? "account:\(actor)")
            try await PasswordAttempts.refuseIfOver(self, keys)
            guard await LinkPasswords.matchesOffThread(password, salt: [UInt8](guarded.salt), hash: [UInt8](guarded.hash)) else {
                try await PasswordAttempts.countFailure(self, keys)
                throw NotesError(.permissionFailure, "That is not the link's password; check it with its owner.")
            }
            checkedHash = guarded.hash
        }
        let verified = checkedHash
        return try await write { context in
            let db = context.db
            let unknown = NotesError(.unknownItem, "No share has this URL: it may have been stopped, or its owner replaced the URL. Ask the owner for a new one.")
            guard let link = try Row.fetchOne(
                db.cachedStatement(sql: "SELECT id, public_expires_at, password_salt, password_hash FROM shares WHERE url_token = ? AND stopped = 0"),
                arguments: [urlToken])
            else {
                throw unknown
            }
            let id: String = link[0]
            let expiresAt: Double? = link[1]
            let salt: Data? = link[2], hash: Data? = link[3]
            let share = try Self.loadShare(db, id: id)
            guard share.owner != actor else {
                throw NotesError(.invalidArguments, "You own this share; its notes are already under private/.")
            }
            let email = try String.fetchOne(db.cachedStatement(sql: "SELECT email FROM accounts WHERE name = ?"), arguments: [actor])
            let seq = context.nextSeq()
            let mine = share.participant(named: actor)
                ?? share.participants.first { $0.name == nil && $0.email != nil && $0.email == email }
            switch mine?.status {
            case .accepted?:
                throw NotesError(.constraintViolation, "You have already accepted this share; it is under shared/\(share.owner)/.")
            case .pending?:
                try db.cachedStatement(sql: """
                    UPDATE participants SET account = ?, status = 'accepted', changed_seq = ?
                    WHERE share_id = ? AND (account = ? OR (account IS NULL AND email = ?))
                    """).execute(arguments: [actor, seq, id, actor, email])
            case .removed?, nil:
                guard share.publicPermission != .none else {
                    throw NotesError(.permissionFailure, mine == nil
                        ? "This share is not public and you are not invited; ask \(share.owner) to invite you."
                        : "\(share.owner) removed you from this share; ask them to invite you again.")
                }
                // An expired public link answers like one that does not exist.
                if let expiresAt, self.clock().timeIntervalSince1970 >= expiresAt { throw unknown }
                if salt != nil, let hash {
                    guard password != nil else {
                        throw NotesError(.permissionFailure, "This link needs a password; ask \(share.owner) for it and pass it with --password.")
                    }
                    guard verified == hash else {
                        throw NotesError(.permissionFailure, "The link's password changed while it was checked; try again with the new one.")
                    }
                }
                let permission: ParticipantPermission = share.publicPermission == .readWrite ? .readWrite : .readOnly
                if mine != nil {
                    try db.cachedStatement(sql: "UPDATE participants SET role = 'publicUser', permission = ?, status = 'accepted', changed_seq = ? WHERE share_id = ? AND account = ?").execute(arguments: [permission.rawValue, seq, id, actor])
                } else {
                    try Self.insertParticipant(db, shareID: id, account: actor, email: nil, role: .publicUser, permission: permission, status: .accepted, seq: seq)
                }
            }
            context.notices.insert(ChangeNotice(account: actor, scope: .shared, zone: nil))
            context.notices.insert(ChangeNotice(account: share.owner, scope: .private, zone: share.zone))
            return try Self.loadShare(db, id: id)
        }
    }

    /// The salt and hash of a live link's password, or nil when it has none (or no such link).
    func passwordOfLink(_ urlToken: String) async throws(NotesError) -> (shareID: String, salt: Data, hash: Data)? {
        try await read { db in
            guard let row = try Row.fetchOne(
                db.cachedStatement(sql: "SELECT id, password_salt, password_hash FROM shares WHERE url_token = ? AND stopped = 0"),
                arguments: [urlToken]),
                let salt = row[1] as Data?, let hash = row[2] as Data?
            else { return nil }
            return (row[0], salt, hash)
        }
    }

    public func publicShare(urlToken: String) async throws(NotesError) -> (share: Share, records: [NotesModel.Record]) {
        try await read { db in
            let share = try Self.publicLink(db, urlToken: urlToken, now: self.clock())
            // Names and tags only: a visitor's request reads the one note it shows
            // (`publicRecord`), not the content of every note in the share.
            let records = try Row.fetchAll(
                db.cachedStatement(sql: """
                    SELECT record_name, record_type, name, parent, NULL AS body, NULL AS bytes, created_at, modified_at, modified_by, seq, share_id
                    FROM records WHERE owner = ? AND zone = ? AND share_id = ? ORDER BY name
                    """),
                arguments: [share.zone.owner, share.zone.name, share.id]
            ).map { StoredRecord.record(fromColumns: $0, zone: share.zone) }
            return (share, records)
        }
    }

    public func publicRecord(urlToken: String, recordName: String) async throws(NotesError) -> NotesModel.Record {
        try await read { db in
            let share = try Self.publicLink(db, urlToken: urlToken, now: self.clock())
            guard let record = try StoredRecord.fetch(db, recordName, in: share.zone), record.shareID == share.id else {
                throw NotesError(.unknownItem, "There is no public page at this address.")
            }
            return record
        }
    }

    /// The share behind a public link that anyone may read now; otherwise the same 404
    /// as for a token that does not exist.
    static func publicLink(_ db: Database, urlToken: String, now: Date) throws -> Share {
        let unknown = NotesError(.unknownItem, "There is no public page at this address.")
        guard let link = try Row.fetchOne(
            db.cachedStatement(sql: "SELECT id, public_permission, public_expires_at, password_hash FROM shares WHERE url_token = ? AND stopped = 0"),
            arguments: [urlToken])
        else { throw unknown }
        let expiresAt: Double? = link[2]
        let passwordHash: Data? = link[3]
        guard (link[1] as String) != PublicPermission.none.rawValue, passwordHash == nil,
              expiresAt.map({ now.timeIntervalSince1970 < $0 }) ?? true
        else { throw unknown }
        return try loadShare(db, id: link[0])
    }

    public func leaveShare(id: String, actor: String) async throws(NotesError) {
        try await write { context in
            let share = try Self.loadShare(context.db, id: id)
            let standing = share.owner == actor ? SharingRules.Standing.owner
                : share.participant(named: actor).map { SharingRules.Standing(role: $0.role, permission: $0.permission, status: $0.status) }
            guard standing != nil, standing?.status != .removed else { throw Self.noSuchShare(id) }
            try SharingRules.check(.leave, standing: standing, what: "“\(share.title)”")
            try context.db.cachedStatement(sql: "UPDATE participants SET status = 'removed', changed_seq = ? WHERE share_id = ? AND account = ?").execute(arguments: [context.nextSeq(), id, actor])
            context.notices.insert(ChangeNotice(account: actor, scope: .shared, zone: nil))
            context.notices.insert(ChangeNotice(account: share.owner, scope: .private, zone: share.zone))
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

    static func noSuchShare(_ id: String) -> NotesError {
        NotesError(.unknownItem, "There is no share \(id) that you take part in.")
    }

    static func validateTitle(_ title: String) throws(NotesError) {
        guard !title.isEmpty, title.utf8.count <= 255, !title.unicodeScalars.contains(where: { $0.value < 0x20 }) else {
            throw NotesError(.invalidArguments, "A share title must be 1 to 255 bytes long, without control characters.")
        }
    }

    /// The share, if it is active and owned by `actor`; participants get
    /// `permissionFailure`, strangers `unknownItem`.
    static func ownedShare(_ db: Database, id: String, actor: String) throws -> Share {
        let share = try loadShare(db, id: id)
        guard share.owner == actor else {
            if let participant = share.participant(named: actor), participant.status != .removed {
                let standing = SharingRules.Standing(role: participant.role, permission: participant.permission, status: participant.status)
                try SharingRules.check(.changeShare, standing: standing, what: "“\(share.title)”")
            }
            throw noSuchShare(id)
        }
        return share
    }

    static func loadShare(_ db: Database, id: String) throws -> Share {
        guard let row = try Row.fetchOne(db.cachedStatement(sql: "SELECT * FROM shares WHERE id = ? AND stopped = 0"), arguments: [id]) else {
            throw noSuchShare(id)
        }
        let participants = try Row.fetchAll(db.cachedStatement(sql: "SELECT * FROM participants WHERE share_id = ? ORDER BY position"), arguments: [id]).map { row in
            Participant(name: row["account"], email: row["email"],
                        role: ParticipantRole(rawValue: row["role"]) ?? .privateUser,
                        permission: ParticipantPermission(rawValue: row["permission"]) ?? .readOnly,
                        status: ParticipantStatus(rawValue: row["status"]) ?? .removed)
        }
        let expiresAt: Double? = row["public_expires_at"]
        let passwordHash: Data? = row["password_hash"]
        return Share(id: id, zone: ZoneID(owner: row["owner"], name: row["zone"]), rootRecordName: row["root_record"], title: row["title"],
                     publicPermission: PublicPermission(rawValue: row["public_permission"]) ?? .none, urlToken: row["url_token"],
                     participants: participants, createdAt: Date(stored: row["created_at"]),
                     publicExpiresAt: expiresAt.map(Date.init(stored:)), passwordProtected: passwordHash != nil)
    }

    static func insertParticipant(_ db: Database, shareID: String, account: String?, email: String?, role: ParticipantRole,
                                  permission: ParticipantPermission, status: ParticipantStatus, seq: Int64) throws {
        let active = try Int.fetchOne(db.cachedStatement(sql: "SELECT COUNT(*) FROM participants WHERE share_id = ? AND status != 'removed'"), arguments: [shareID]) ?? 0
        guard active < Limits.maxParticipants else {
            throw NotesError(.limitExceeded, "A share has at most \(Limits.maxParticipants) participants; remove someone first.")
        }
        let position = (try Int.fetchOne(db.cachedStatement(sql: "SELECT MAX(position) FROM participants WHERE share_id = ?"), arguments: [shareID]) ?? 0) + 1
        try db.cachedStatement(sql: """
            INSERT INTO participants (share_id, position, account, email, role, permission, status, changed_seq) VALUES (?, ?, ?, ?, ?, ?, ?, ?)
            """).execute(arguments: [shareID, position, account, email, role.rawValue, permission.rawValue, status.rawValue, seq])
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
                    throw NotesError(.unknownItem, "\(name) is not an account on this server; ask your admin to run `notes account create \(name)`.")
                }
                account = name
            } else if let address = invitee.email {
                try Names.validateEmail(address)
                email = address
                account = try String.fetchOne(db.cachedStatement(sql: "SELECT name FROM accounts WHERE email = ?"), arguments: [address])
            } else {
                throw NotesError(.invalidArguments, "Each invitee needs an account name or an email address.")
            }
            if account == owner {
                throw NotesError(.invalidArguments, "You own this share; invite others.")
            }
            let seq = context.nextSeq()
            let existing: Row?
            if let account {
                existing = try Row.fetchOne(db.cachedStatement(sql: "SELECT status, role FROM participants WHERE share_id = ? AND account = ?"), arguments: [shareID, account])
            } else {
                existing = try Row.fetchOne(db.cachedStatement(sql: "SELECT status, role FROM participants WHERE share_id = ? AND account IS NULL AND email = ?"), arguments: [shareID, email])
            }
            if let existing {
                let status: String = existing["status"]
                let newStatus = status == "removed" ? "pending" : status
                try db.cachedStatement(sql: """
                    UPDATE participants SET permission = ?, status = ?, role = 'privateUser', changed_seq = ?
                    WHERE share_id = ? AND ((account IS NOT NULL AND account = ?) OR (account IS NULL AND email = ?))
                    """).execute(arguments: [invitee.permission.rawValue, newStatus, seq, shareID, account, email])
            } else {
                try insertParticipant(db, shareID: shareID, account: account, email: email, role: .privateUser, permission: invitee.permission, status: .pending, seq: seq)
            }
            if let account {
                context.notices.insert(ChangeNotice(account: account, scope: .shared, zone: nil))
            }
        }
    }
}
