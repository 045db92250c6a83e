public import Foundation
public import NotesModel
import NotesStoreRules
import PostgresNIO

extension PostgresStore {
    public func createShare(_ request: NewShare, actor: String) async throws(NotesError) -> Share {
        try ShareRules.checkRequest(request, actor: actor)
        return try await write(.zone(request.zone)) { context in
            let sql = context.sql
            let zone = request.zone
            let access = try await PostgresRecords.access(sql, zone: zone, actor: actor)
            var members: [String] = []
            var root: Record?
            if let rootName = request.rootRecordName, access.zoneWideShare == nil {
                root = try await PostgresRecords.fetchMetadata(sql, rootName, in: zone)
                if root != nil { members = [rootName] }
                if let root, root.recordType == .folder, root.shareID == nil { members += try await PostgresRecords.descendants(sql, of: rootName, in: zone) }
            }
            let title = try ShareRules.checkNewShare(request, actor: actor, access: access, root: root, members: members)
            let shares = try await sql.value("SELECT COUNT(*) FROM shares WHERE owner = \(zone.owner) AND NOT stopped", as: Int64.self) ?? 0
            try self.storage.checkCount(.shares, has: Int(shares), owner: zone.owner, actor: actor)
            if request.rootRecordName == nil {
                members = try await sql.column("SELECT record_name FROM records WHERE owner = \(zone.owner) AND zone = \(zone.name)", as: String.self)
            }
            let shareID = "sh_" + SecureRandom.hex(bytes: 12)
            let seq = try context.nextSeq()
            try await sql.execute(
                """
                INSERT INTO shares (id, owner, zone, root_record, title, public_permission, url_token, created_at)
                VALUES (\(shareID), \(zone.owner), \(zone.name), \(request.rootRecordName), \(title),
                        \((request.publicPermission ?? .none).rawValue), \(SecureRandom.token(bytes: 32)), \(context.now.storedValue))
                """)
            try await sql.execute(
                """
                INSERT INTO participants (share_id, position, account, email, role, permission, status, changed_seq)
                VALUES (\(shareID), 0, \(actor), NULL, 'owner', 'readWrite', 'accepted', \(seq))
                """)
            let writer = PostgresShareWriter(context: context)
            for name in members {
                try await writer.setShare(of: name, in: zone, from: nil, to: shareID)
            }
            try await Self.invite(request.participants ?? [], to: shareID, owner: actor, context: context)
            try await context.zoneChanged(zone)
            return try await Self.loadShare(sql, id: shareID)
        }
    }

    public func share(id: String, actor: String) async throws(NotesError) -> Share {
        try await read { sql in
            let share = try await Self.loadShare(sql, id: id)
            try ShareRules.requireVisible(share, actor: actor)
            return share
        }
    }

    public func shares(actor: String) async throws(NotesError) -> [Share] {
        try await sharesOf(actor, status: .accepted)
    }

    public func invitations(actor: String) async throws(NotesError) -> [Share] {
        try await sharesOf(actor, status: .pending)
    }

    /// The active shares in which `actor` has `status`, oldest first.
    private func sharesOf(_ actor: String, status: ParticipantStatus) async throws(NotesError) -> [Share] {
        try await read { sql in
            var shares: [Share] = []
            for id in try await sql.column(
                """
                SELECT s.id FROM shares s JOIN participants p ON p.share_id = s.id
                WHERE p.account = \(actor) AND p.status = \(status.rawValue) AND NOT s.stopped ORDER BY s.created_at, s.id COLLATE "C"
                """, as: String.self)
            {
                shares.append(try await Self.loadShare(sql, id: id))
            }
            return shares
        }
    }

    public func updateShare(id: String, _ update: ShareUpdate, actor: String) async throws(NotesError) -> Share {
        if let title = update.title { try ShareRules.validateTitle(title) }
        try update.validate()
        let password = try await LinkPasswords.newPassword(of: update)
        return try await write(.zoneOfShare(id: id)) { context in
            let sql = context.sql
            let share = try await Self.ownedShare(sql, id: id, actor: actor)
            if let title = update.title {
                try await sql.execute("UPDATE shares SET title = \(title) WHERE id = \(id)")
            }
            if let permission = update.publicPermission, permission != share.publicPermission {
                try await sql.execute("UPDATE shares SET public_permission = \(permission.rawValue) WHERE id = \(id)")
                // Public users' access follows the public permission: expire their tokens.
                let seq = try context.nextSeq()
                for participant in share.participants where participant.role == .publicUser && participant.status == .accepted {
                    guard let name = participant.name else { continue }
                    try await sql.execute("UPDATE participants SET changed_seq = \(seq) WHERE share_id = \(id) AND account = \(name)")
                    context.notices.insert(ChangeNotice(account: name, scope: .shared, zone: nil))
                }
            }
            if update.rotateURL == true {
                try await sql.execute("UPDATE shares SET url_token = \(SecureRandom.token(bytes: 32)), public_views = 0 WHERE id = \(id)")
            }
            if let seconds = update.publicExpiresIn {
                let expiry: Double? = seconds > 0 ? context.now.addingTimeInterval(seconds).storedValue : nil
                try await sql.execute("UPDATE shares SET public_expires_at = \(expiry) WHERE id = \(id)")
            }
            if let stored = password {
                try await sql.execute(
                    """
                    UPDATE shares SET password_salt = \(stored.map { Data($0.salt) }), password_hash = \(stored.map { Data($0.hash) }) WHERE id = \(id)
                    """)
            }
            context.notices.insert(ChangeNotice(account: actor, scope: .private, zone: share.zone))
            return try await Self.loadShare(sql, id: id)
        }
    }

    public func addParticipants(shareID: String, _ invitees: [Invitee], actor: String) async throws(NotesError) -> Share {
        try await write(.zoneOfShare(id: shareID)) { context in
            _ = try await Self.ownedShare(context.sql, id: shareID, actor: actor)
            try await Self.invite(invitees, to: shareID, owner: actor, context: context)
            return try await Self.loadShare(context.sql, id: shareID)
        }
    }

    public func removeParticipant(shareID: String, name: String, actor: String) async throws(NotesError) -> Share {
        try await write(.zoneOfShare(id: shareID)) { context in
            let sql = context.sql
            let share = try await Self.ownedShare(sql, id: shareID, actor: actor)
            guard let participant = try ShareRules.participantToRemove(share, name: name, actor: actor) else { return share }
            try await sql.execute(
                """
                UPDATE participants SET status = 'removed', changed_seq = \(try context.nextSeq())
                WHERE share_id = \(shareID) AND (account = \(name) OR (account IS NULL AND email = \(name)))
                """)
            if let account = participant.name {
                context.notices.insert(ChangeNotice(account: account, scope: .shared, zone: nil))
            }
            context.notices.insert(ChangeNotice(account: actor, scope: .private, zone: share.zone))
            return try await Self.loadShare(sql, id: shareID)
        }
    }

    public func acceptShare(urlToken: String, password: String?, actor: String, client: String?) async throws(NotesError) -> Share {
        let verified = try await PasswordAttempts.verify(password, urlToken: urlToken, actor: actor, client: client, store: self)
        return try await write(.zoneOfLink(urlToken: urlToken)) { context in
            let sql = context.sql
            guard let link = try await sql.row("SELECT id, public_expires_at, password_salt, password_hash FROM shares WHERE url_token = \(urlToken) AND NOT stopped") else {
                throw ShareRules.unknownLink
            }
            let (id, expiresAt, salt, hash) = try link.decode((String, Double?, Data?, Data?).self)
            let share = try await Self.loadShare(sql, id: id)
            let email = try await sql.value("SELECT email FROM accounts WHERE name = \(actor)", as: String?.self) ?? nil
            let seq = try context.nextSeq()
            let mine = ShareRules.participant(in: share, actor: actor, email: email)
            switch try ShareRules.acceptance(
                share, actor: actor, mine: mine, now: clock(), expiresAt: expiresAt, passwordHash: salt == nil ? nil : hash,
                passwordGiven: password != nil, verified: verified)
            {
            case .invitation:
                try await sql.execute(
                    """
                    UPDATE participants SET account = \(actor), status = 'accepted', changed_seq = \(seq)
                    WHERE share_id = \(id) AND (account = \(actor) OR (account IS NULL AND email = \(email)))
                    """)
            case .publicUser(let permission, again: true):
                try await sql.execute(
                    """
                    UPDATE participants SET role = 'publicUser', permission = \(permission.rawValue), status = 'accepted', changed_seq = \(seq)
                    WHERE share_id = \(id) AND account = \(actor)
                    """)
            case .publicUser(let permission, again: false):
                try await Self.insertParticipant(sql, shareID: id, account: actor, email: nil, role: .publicUser, permission: permission, status: .accepted, seq: seq)
            }
            context.notices.insert(ChangeNotice(account: actor, scope: .shared, zone: nil))
            context.notices.insert(ChangeNotice(account: share.owner, scope: .private, zone: share.zone))
            return try await Self.loadShare(sql, id: id)
        }
    }

    public func publicShare(urlToken: String, pass: String?) async throws(NotesError) -> (share: Share, records: [Record]) {
        let now = clock()
        return try await read { sql in
            let share = try await Self.publicLink(sql, urlToken: urlToken, pass: pass, now: now)
            // Names and tags only: a visitor's request reads the one note it shows
            // (`publicRecord`), not the content of every note in the share.
            let records = try await sql.rows(
                """
                SELECT \(unescaped: PostgresRecords.metadataColumns) FROM records r
                WHERE owner = \(share.zone.owner) AND zone = \(share.zone.name) AND share_id = \(share.id) AND \(unescaped: Self.shownRecord)
                ORDER BY name COLLATE "C"
                """
            ).map { try PostgresRecords.record(from: $0, zone: share.zone).record }
            return (share, records)
        }
    }

    public func publicRecord(urlToken: String, recordName: String, pass: String?) async throws(NotesError) -> Record {
        let now = clock()
        return try await read { sql in
            let share = try await Self.publicLink(sql, urlToken: urlToken, pass: pass, now: now)
            guard let record = try await PostgresRecords.fetch(sql, recordName, in: share.zone), record.shareID == share.id,
                !(try await Self.restoring(sql, in: share.zone).contains(recordName))
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
    static func publicLink(_ sql: SQL, urlToken: String, pass: String?, now: Date) async throws -> Share {
        guard
            let link = try await sql.row(
                """
                SELECT id, public_permission, public_expires_at, password_hash FROM shares WHERE url_token = \(urlToken) AND NOT stopped
                """)
        else { throw ShareRules.noPublicPage }
        let (id, publicPermission, expiresAt, hash) = try link.decode((String, String, Double?, Data?).self)
        let unlocked = hash.map { LinkPass.isValid(pass, urlToken: urlToken, passwordHash: $0, now: now) } ?? false
        try ShareRules.checkPublicLink(publicPermission: publicPermission, hasPassword: hash != nil, unlocked: unlocked, expiresAt: expiresAt, now: now)
        return try await loadShare(sql, id: id)
    }

    public func countPublicViews(_ views: [String: Int]) async throws(NotesError) {
        guard !views.isEmpty else { return }
        let tokens = Array(views.keys)
        let counts = tokens.map { Int64(views[$0] ?? 0) }
        try await write(.none) { context in
            try await context.sql.execute(
                """
                UPDATE shares SET public_views = public_views + v.count
                FROM unnest(\(tokens)::text[], \(counts)::bigint[]) AS v(token, count) WHERE shares.url_token = v.token
                """)
        }
    }

    public func leaveShare(id: String, actor: String) async throws(NotesError) {
        try await write(.zoneOfShare(id: id)) { context in
            let share = try await Self.loadShare(context.sql, id: id)
            try ShareRules.checkLeave(share, actor: actor)
            try await context.sql.execute("UPDATE participants SET status = 'removed', changed_seq = \(try context.nextSeq()) WHERE share_id = \(id) AND account = \(actor)")
            context.notices.insert(ChangeNotice(account: actor, scope: .shared, zone: nil))
            context.notices.insert(ChangeNotice(account: share.owner, scope: .private, zone: share.zone))
        }
    }

    public func stopShare(id: String, actor: String) async throws(NotesError) {
        try await write(.zoneOfShare(id: id)) { context in
            let share = try await Self.ownedShare(context.sql, id: id, actor: actor)
            try await PostgresShareWriter(context: context).stop(shareID: id, zone: share.zone)
            try await context.zoneChanged(share.zone)
        }
    }

    // MARK: Helpers

    /// The share, if it is active and owned by `actor`.
    static func ownedShare(_ sql: SQL, id: String, actor: String) async throws -> Share {
        let share = try await loadShare(sql, id: id)
        try ShareRules.requireOwner(share, actor: actor)
        return share
    }

    static func loadShare(_ sql: SQL, id: String) async throws -> Share {
        guard
            let row = try await sql.row(
                """
                SELECT owner, zone, root_record, title, public_permission, url_token, created_at, public_expires_at, password_hash IS NOT NULL, public_views
                FROM shares WHERE id = \(id) AND NOT stopped
                """)
        else {
            throw ShareRules.noSuchShare(id)
        }
        let (owner, zone, root, title, publicPermission, urlToken, createdAt, expiresAt, hasPassword, views) =
            try row.decode((String, String, String?, String, String, String, Double, Double?, Bool, Int64).self)
        let participants = try await sql.rows("SELECT account, email, role, permission, status FROM participants WHERE share_id = \(id) ORDER BY position").map { row in
            let (account, email, role, permission, status) = try row.decode((String?, String?, String, String, String).self)
            return ShareRules.participant(account: account, email: email, role: role, permission: permission, status: status)
        }
        return Share(
            id: id, zone: ZoneID(owner: owner, name: zone), rootRecordName: root, title: title,
            publicPermission: PublicPermission(rawValue: publicPermission) ?? .none, urlToken: urlToken,
            participants: participants, createdAt: Date(stored: createdAt),
            publicExpiresAt: expiresAt.map(Date.init(stored:)), passwordProtected: hasPassword, publicViews: Int(views))
    }

    static func insertParticipant(
        _ sql: SQL, shareID: String, account: String?, email: String?, role: ParticipantRole,
        permission: ParticipantPermission, status: ParticipantStatus, seq: Int64
    ) async throws {
        let active = try await sql.value("SELECT COUNT(*) FROM participants WHERE share_id = \(shareID) AND status != 'removed'", as: Int.self) ?? 0
        try ShareRules.checkRoom(active: active)
        let position = (try await sql.value("SELECT MAX(position) FROM participants WHERE share_id = \(shareID)", as: Int?.self) ?? nil).map { $0 + 1 } ?? 1
        try await sql.execute(
            """
            INSERT INTO participants (share_id, position, account, email, role, permission, status, changed_seq)
            VALUES (\(shareID), \(position), \(account), \(email), \(role.rawValue), \(permission.rawValue), \(status.rawValue), \(seq))
            """)
    }

    /// Adds invitees as pending participants, or changes the permission of those
    /// already in; a removed participant invited again is pending again.
    static func invite(_ invitees: [Invitee], to shareID: String, owner: String, context: PostgresWrite) async throws {
        let sql = context.sql
        for invitee in invitees {
            var account: String?
            var email: String?
            if let name = invitee.name {
                guard try await sql.exists("SELECT 1 FROM accounts WHERE name = \(name)") else { throw ShareRules.unknownInvitee(name) }
                account = name
            } else if let address = invitee.email {
                try Names.validateEmail(address)
                email = address
                account = try await sql.value("SELECT name FROM accounts WHERE email = \(address)", as: String.self)
            } else {
                throw ShareRules.inviteeNeedsNameOrEmail
            }
            try ShareRules.checkInvitee(account: account, owner: owner)
            let seq = try context.nextSeq()
            let status =
                account != nil
                ? try await sql.value("SELECT status FROM participants WHERE share_id = \(shareID) AND account = \(account)", as: String.self)
                : try await sql.value("SELECT status FROM participants WHERE share_id = \(shareID) AND account IS NULL AND email = \(email)", as: String.self)
            if let status {
                try await sql.execute(
                    """
                    UPDATE participants SET permission = \(invitee.permission.rawValue), status = \(ShareRules.statusWhenInvitedAgain(status)), role = 'privateUser', changed_seq = \(seq)
                    WHERE share_id = \(shareID) AND ((account IS NOT NULL AND account = \(account)) OR (account IS NULL AND email = \(email)))
                    """)
            } else {
                try await insertParticipant(sql, shareID: shareID, account: account, email: email, role: .privateUser, permission: invitee.permission, status: .pending, seq: seq)
            }
            if let account {
                context.notices.insert(ChangeNotice(account: account, scope: .shared, zone: nil))
            }
        }
    }
}
