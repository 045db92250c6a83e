public import Foundation

/// How much an account may store and how long old versions are kept: the settings that
/// keep one account from filling the disk for everyone.
public struct StoragePolicy: Sendable, Equatable {
    /// Bytes of note text, attachments and kept versions in the zones an account owns,
    /// with `rowBytes` for each record and version (a participant's writes count for the
    /// owner, as in iCloud); nil: no limit.
    public var quotaBytes: Int64?
    public var retention: VersionRetention
    /// Days a deleted record stays in the trash before it and its history are purged.
    public var trashDays: Int
    /// How many zones, shares (not stopped) and tokens (not expired) one account may
    /// have. Each is a row that costs no bytes of the quota, so each has a count of its
    /// own; without one, an account could make them until the disk was full.
    public var zonesPerAccount: Int
    public var sharesPerAccount: Int
    public var tokensPerAccount: Int

    public init(
        quotaBytes: Int64? = StoragePolicy.defaultQuotaBytes, retention: VersionRetention = VersionRetention(), trashDays: Int = 30,
        zonesPerAccount: Int = 1_000, sharesPerAccount: Int = 10_000, tokensPerAccount: Int = 1_000
    ) {
        self.quotaBytes = quotaBytes
        self.retention = retention
        self.trashDays = trashDays
        self.zonesPerAccount = zonesPerAccount
        self.sharesPerAccount = sharesPerAccount
        self.tokensPerAccount = tokensPerAccount
    }

    /// What an account has a bounded number of.
    package enum Counted: String, Sendable {
        case zones, shares, tokens
    }

    /// Refuses one more of `kind` for `owner`, who has `count` of them, at the bound.
    /// (Counted in the transaction that adds one; on PostgreSQL tokens are issued beside
    /// other writes, so two issued at once may each find room for one.)
    package func checkCount(_ kind: Counted, has count: Int, owner: String, actor: String) throws(NotesError) {
        let limit =
            switch kind {
            case .zones: zonesPerAccount
            case .shares: sharesPerAccount
            case .tokens: tokensPerAccount
            }
        guard count >= limit else { return }
        let remedy =
            switch kind {
            case .zones: "delete a zone no longer used"
            case .shares: "stop a share no longer needed"
            case .tokens: "revoke tokens no longer in use"
            }
        throw NotesError(
            .quotaExceeded,
            owner == actor
                ? "You have \(count) \(kind.rawValue), the most one account may have; \(remedy), then try again."
                : "\(owner) has \(count) \(kind.rawValue), the most one account may have; \(owner) must \(remedy) first.")
    }

    /// Records deleted before this are purged from the trash at `now`.
    package func trashExpiring(at now: Date) -> Date {
        now.addingTimeInterval(-Double(trashDays) * 86_400)
    }

    /// 10 GiB: room for a million notes of a few kilobytes with their histories.
    public static let defaultQuotaBytes: Int64 = 10 << 30

    /// What each record and each kept version counts toward its owner's storage besides
    /// its content: its names, its row and their indexes cost the disk something, and
    /// without it an account could fill the disk with empty notes, or with saves that
    /// change nothing, within any quota. (Both stores' usage triggers add it.)
    public static let rowBytes: Int64 = 256

    /// Why a change was refused over the quota of `owner`, as `actor` reads it.
    package static func fullMessage(owner: String, actor: String, used: Int64, quota: Int64) -> String {
        let sizes = "\(format(used)) of \(format(quota))"
        return owner == actor
            ? "Your storage is full (this change would use \(sizes)); delete notes or attachments, or ask the admin for more room. Nothing was saved."
            : "\(owner)'s storage is full (this change would use \(sizes)); ask \(owner) to make room. Nothing was saved."
    }

    static func format(_ bytes: Int64) -> String {
        ByteCountFormatter.string(fromByteCount: bytes, countStyle: .binary)
    }

    /// Reads a size such as `500M`, `10G`, `1048576` or `0`/`none` (no limit).
    public static func parseSize(_ text: String) -> Int64?? {
        let lowered = text.lowercased().trimmingCharacters(in: .whitespaces)
        if lowered == "0" || lowered == "none" || lowered == "unlimited" { return .some(nil) }
        let units: [(String, Int64)] = [("k", 1 << 10), ("m", 1 << 20), ("g", 1 << 30), ("t", 1 << 40)]
        var digits = lowered.hasSuffix("ib") ? String(lowered.dropLast(2)) : lowered.hasSuffix("b") ? String(lowered.dropLast()) : lowered
        var scale: Int64 = 1
        if let (suffix, factor) = units.first(where: { digits.hasSuffix($0.0) }) {
            digits = String(digits.dropLast(suffix.count))
            scale = factor
        }
        guard let value = Int64(digits), value > 0 else { return nil }
        let (bytes, overflow) = value.multipliedReportingOverflow(by: scale)
        return overflow ? nil : .some(bytes)
    }
}

/// Which earlier versions of a record are kept: every one for `keepAllDays`, then the
/// newest of each day until `keepDailyDays`, then the newest of each week; the newest
/// earlier version is always kept (what "undo my last save" needs), and so is the
/// record itself, which is not a version.
public struct VersionRetention: Sendable, Equatable {
    public var keepAllDays: Int
    public var keepDailyDays: Int

    public init(keepAllDays: Int = 30, keepDailyDays: Int = 365) {
        self.keepAllDays = keepAllDays
        self.keepDailyDays = max(keepDailyDays, keepAllDays)
    }

    /// Versions modified before this may have expired at `now` (none after it has).
    package func expiring(at now: Date) -> Date {
        now.addingTimeInterval(-Double(keepAllDays) * 86_400)
    }

    /// Of one record's versions (any order), the indices to delete at `now`.
    public func expired(_ modifiedAt: [Date], now: Date) -> [Int] {
        let newestFirst = modifiedAt.indices.sorted { modifiedAt[$0] > modifiedAt[$1] }
        var keptBuckets: Set<Int64> = []
        var expired: [Int] = []
        for (rank, index) in newestFirst.enumerated() {
            let age = now.timeIntervalSince(modifiedAt[index])
            if age < Double(keepAllDays) * 86_400 { continue }
            // (Bounded before converting: a stored date far out of range must not trap.)
            let seconds = min(max(modifiedAt[index].timeIntervalSince1970, -1e13), 1e13)
            // Days and weeks on the UTC calendar, numbered so the two never collide.
            let bucket =
                age < Double(keepDailyDays) * 86_400
                ? Int64((seconds / 86_400).rounded(.down)) * 2
                : Int64((seconds / 604_800).rounded(.down)) * 2 + 1
            // The newest is kept whatever its bucket; it still fills that bucket.
            if !keptBuckets.insert(bucket).inserted && rank > 0 { expired.append(index) }
        }
        return expired.sorted()
    }
}
