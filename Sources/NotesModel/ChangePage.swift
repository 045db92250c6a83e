/// Where a page of a zone's changes starts and ends, the same for every backend: the
/// store reads the caller's view of the zone (all of it for the owner, the shares'
/// records for a participant) from where the token left off, at most `limit + 1`
/// records and tombstones each, and this cuts the page.
package struct ChangePage: Sendable {
    package let limit: Int
    /// Where the page may end: the database's present as the read saw it, or just
    /// before the first change of a restore still under way in the zone.
    package let current: Int64
    package let access: ZoneAccess
    /// Changes after this sequence number belong in the page.
    package let since: Int64

    /// Checks a client's token against the zone as it is now.
    /// - Parameter prunedThrough: the last change number whose tombstones the zone has
    ///   lost to retention (`TombstoneRetention`); a token from before it may have missed one.
    /// - Parameter heldAt: the change number at which the oldest restore under way in the
    ///   zone began (`RestoreRules`): its records are written in several turns, and no
    ///   page goes past its start until the last turn shows them all at once.
    package init(access: ZoneAccess, since parsed: ZoneChangeToken?, limit: Int, current: Int64, prunedThrough: Int64 = 0, heldAt: Int64? = nil) throws(NotesError) {
        if let parsed {
            if parsed.epoch != access.epoch {
                throw NotesError(.changeTokenExpired, "The zone \(access.zone.name) was deleted and created again; fetch all its records from scratch.")
            }
            if parsed.membership != access.membershipSeq {
                throw NotesError(.changeTokenExpired, "Your access to \(access.zone.owner)'s notes changed; fetch all records from scratch.")
            }
            if parsed.seq < prunedThrough {
                throw NotesError(
                    .changeTokenExpired,
                    "This copy of \(access.zone.owner)'s \(access.zone.name) is older than the 90 days deletions are kept; fetch all its records from scratch.")
            }
            if parsed.seq > current {
                throw NotesError(.invalidArguments, "The change token is not one this server issued; fetch without a token to start over.")
            }
        }
        self.access = access
        self.limit = limit
        self.since = parsed?.seq ?? 0
        self.current = max(min(current, heldAt ?? current), since)
    }

    /// A page size as asked for, within 1 and `Limits.maxChangesPage`.
    package static func clamp(_ limit: Int) -> Int { min(max(limit, 1), Limits.maxChangesPage) }

    /// Where the page ends: records and tombstones merged in change order, cut after
    /// `limit` of them (or at the zone's present when fewer are left), and at the last
    /// record read when reading stopped early for size (`recordsCutShort`).
    package func end(recordSeqs: [Int64], tombstones: [(seq: Int64, name: String)], recordsCutShort: Bool = false) -> (cut: Int64, moreComing: Bool) {
        var seqs = recordSeqs + tombstones.map(\.seq)
        seqs.sort()
        var moreComing = seqs.count > limit
        var cut = moreComing ? seqs[limit - 1] : current
        if recordsCutShort, let last = recordSeqs.last, last < cut {
            cut = last
            moreComing = true
        }
        return (cut, moreComing)
    }

    package func token(_ cut: Int64) -> String {
        ZoneChangeToken(epoch: access.epoch, seq: cut, membership: access.membershipSeq).encoded
    }

    /// The names deleted within the page. A tombstone of a record that exists again in
    /// the page is dropped, so a client never deletes what it should keep.
    package static func deleted(_ tombstones: [(seq: Int64, name: String)], upTo cut: Int64, present: Set<String>) -> [String] {
        var deleted: [String] = []
        var seen = Set<String>()
        for tombstone in tombstones where tombstone.seq <= cut && !present.contains(tombstone.name) && seen.insert(tombstone.name).inserted {
            deleted.append(tombstone.name)
        }
        return deleted
    }

    /// How many of the records read next, of these content sizes, the page takes: it
    /// stops once past `Limits.maxChangesPageBytes` (`cutShort`). For a store that reads
    /// the sizes before the content.
    package static func fitting(contentSizes: [Int]) -> (count: Int, cutShort: Bool) {
        var bytes = 0
        for (index, size) in contentSizes.enumerated() {
            if bytes > Limits.maxChangesPageBytes { return (index, true) }
            bytes += size
        }
        return (contentSizes.count, false)
    }

    /// The page of values from the records read (in change order, with their seqs, and
    /// whether reading stopped for size) and the tombstones read.
    package func changes(records: [(seq: Int64, record: Record)], tombstones: [(seq: Int64, name: String)], recordsCutShort: Bool) -> ZoneChanges {
        let end = end(recordSeqs: records.map(\.seq), tombstones: tombstones, recordsCutShort: recordsCutShort)
        let pageRecords = records.prefix { $0.seq <= end.cut }.map(\.record)
        let deleted = Self.deleted(tombstones, upTo: end.cut, present: Set(pageRecords.map(\.recordName)))
        return ZoneChanges(records: pageRecords, deleted: deleted, changeToken: token(end.cut), moreComing: end.moreComing)
    }
}

extension DatabaseChanges {
    /// The token a client sent, checked against the database's present (`nil`: none
    /// sent). A token of another database (the store moved, or was restored elsewhere)
    /// or, on a store that counts in transactions, one from past the present (a restored
    /// backup) has expired: the client lists the changed zones again from no token, and
    /// its zones' own tokens still hold.
    package static func since(_ token: String?, current: DatabaseChangeToken) throws(NotesError) -> DatabaseChangeToken? {
        guard let token else { return nil }
        let parsed = try DatabaseChangeToken(parsing: token)
        guard parsed.database == current.database, parsed.end <= current.end || current.database == nil else {
            throw NotesError(
                .changeTokenExpired,
                "This database change token is from another copy of the database; list the changed zones again without a token (each zone's own token still holds).")
        }
        guard parsed.seq <= current.seq || current.database != nil else {
            throw NotesError(.invalidArguments, "The change token is not one this server issued; fetch without a token to start over.")
        }
        return parsed
    }

    /// The shared scope's changes from the caller's participations grouped by zone
    /// (whether their membership or the zone changed since the token): a zone still
    /// visible changed when either did; one no longer visible whose membership changed
    /// is gone for the caller.
    package static func shared(_ rows: [(zone: ZoneID, membershipChanged: Bool, zoneChanged: Bool)], visible: Set<ZoneID>, current: DatabaseChangeToken) -> DatabaseChanges {
        var changed: [ZoneID] = []
        var deleted: [ZoneID] = []
        for row in rows {
            if visible.contains(row.zone) {
                if row.membershipChanged || row.zoneChanged { changed.append(row.zone) }
            } else if row.membershipChanged {
                deleted.append(row.zone)
            }
        }
        return DatabaseChanges(changedZones: changed, deletedZones: deleted, changeToken: current.encoded, moreComing: false)
    }
}
