import Foundation
import NotesModel
import NotesPostgres
import Testing

/// The payloads of `pg_notify`: compact, under PostgreSQL's 8,000 bytes, read back as sent.
@Suite struct ChangeFeedTests {
    let feed = PostgresChangeFeed(instance: "host-42-abc")

    @Test func aPayloadReadsBackAsSent() throws {
        let notices: Set<ChangeNotice> = [
            ChangeNotice(account: "alice", scope: .private, zone: ZoneID(owner: "alice", name: "Team")),
            ChangeNotice(account: "bob", scope: .shared, zone: ZoneID(owner: "alice", name: "Team \"quoted\" \\ é")),
            ChangeNotice(account: "carol", scope: .shared, zone: nil),
        ]
        let payloads = feed.payloads(for: notices, seq: 1234)
        #expect(payloads.count == 1)
        let message = try #require(PostgresChangeFeed.decode(payloads[0]))
        #expect(message.instance == "host-42-abc" && message.seq == 1234)
        #expect(Set(message.notices) == notices)
        #expect(payloads[0].utf8.count < 200, "\(payloads[0])")
    }

    /// 100 participants of a zone with long names: several payloads, each under the limit,
    /// together every notice.
    @Test func manyNoticesAreSplitUnderTheLimit() throws {
        let zone = ZoneID(owner: String(repeating: "o", count: 200), name: String(repeating: "z", count: 250))
        let notices = Set((0..<100).map { ChangeNotice(account: "participant-\($0)-" + String(repeating: "p", count: 60), scope: .shared, zone: zone) })
        let payloads = feed.payloads(for: notices, seq: 7)
        #expect(payloads.count > 1 && payloads.count <= PostgresChangeFeed.maximumPayloads)
        #expect(payloads.allSatisfy { $0.utf8.count <= PostgresChangeFeed.maximumPayloadBytes })
        let read = payloads.compactMap(PostgresChangeFeed.decode)
        #expect(read.count == payloads.count)
        #expect(Set(read.flatMap(\.notices)) == notices)
    }

    /// More than a few payloads' worth: one "fetch everything" notice per account and scope.
    @Test func tooManyNoticesBecomeFetchEverythingPerAccount() throws {
        let zones = (0..<40).map { ZoneID(owner: "alice", name: "zone-\($0)-" + String(repeating: "z", count: 200)) }
        var notices = Set<ChangeNotice>()
        for zone in zones {
            for account in (0..<30).map({ "account-\($0)" }) {
                notices.insert(ChangeNotice(account: account, scope: .shared, zone: zone))
            }
        }
        let payloads = feed.payloads(for: notices, seq: 9)
        #expect(payloads.allSatisfy { $0.utf8.count <= PostgresChangeFeed.maximumPayloadBytes })
        let read = Set(payloads.compactMap(PostgresChangeFeed.decode).flatMap(\.notices))
        #expect(read == Set((0..<30).map { ChangeNotice(account: "account-\($0)", scope: .shared, zone: nil) }))
    }

    @Test func somethingElseOnTheChannelIsNotRead() {
        #expect(PostgresChangeFeed.decode("hello") == nil)
        #expect(PostgresChangeFeed.decode(#"{"i":"x","s":1,"n":[["a","q"]]}"#) == nil)
    }
}
