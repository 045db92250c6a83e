import Foundation
import NotesModel
import Testing

/// The date writer reads stored rows and request values: it must be total, since a
/// trap while encoding a stored date stops notesd on every start.
@Suite struct NumberBoundsTests {
    static let extremes: [Double] = [
        .infinity, -.infinity, .nan, .greatestFiniteMagnitude, -.greatestFiniteMagnitude,
        1.7976931348623157e+308, -1e308, 1e300, 9.3e15, -9.3e15, 253_402_300_800, -62_167_219_201,
        .leastNonzeroMagnitude, -0.0001,
    ]

    @Test(arguments: extremes)
    func anyTimeIsWrittenAsTwentyFourBytesWithoutTrapping(_ seconds: Double) {
        var bytes: [UInt8] = []
        ISO8601.append(secondsSince1970: seconds, to: &bytes)
        let text = String(decoding: bytes, as: UTF8.self)
        #expect(bytes.count == 24, "\(text)")
        // What it writes, it reads back.
        #expect(ISO8601.date(from: text) != nil, "\(text)")
    }

    @Test func timesOutsideTheFourDigitYearsAreClampedToTheirEnds() {
        #expect(ISO8601.string(from: Date(timeIntervalSince1970: 1.7976931348623157e+308)) == "9999-12-31T23:59:59.999Z")
        #expect(ISO8601.string(from: Date(timeIntervalSince1970: .infinity)) == "9999-12-31T23:59:59.999Z")
        #expect(ISO8601.string(from: Date(timeIntervalSince1970: -1e308)) == "0000-01-01T00:00:00.000Z")
        #expect(ISO8601.string(from: Date(timeIntervalSince1970: .nan)) == "1970-01-01T00:00:00.000Z")
    }

    @Test(arguments: [-62_167_219_200.0, -1.5, 0, 1_795_421_115.123, 253_402_300_799.999])
    func timesInsideTheRangeRoundTripToTheMillisecond(_ seconds: Double) throws {
        let text = ISO8601.string(from: Date(timeIntervalSince1970: seconds))
        let back = try #require(ISO8601.date(from: text))
        #expect(abs(back.timeIntervalSince1970 - seconds) < 0.001, "\(text)")
    }

    @Test(arguments: [Double.nan, .infinity, -.infinity, -1, 1e308, Limits.maxLifetimeSeconds + 1])
    func lifetimesOutsideTheirBoundsAreRefused(_ seconds: Double) {
        let error = #expect(throws: NotesError.self) { try ShareUpdate(publicExpiresIn: seconds).validate() }
        #expect(error?.code == .invalidArguments)
        #expect(throws: NotesError.self) { try Limits.validateLifetime(seconds, field: "expiresIn", allowsZero: false) }
    }

    @Test(arguments: [0.0, 1.0, 604_800.0, Limits.maxLifetimeSeconds])
    func lifetimesWithinBoundsPass(_ seconds: Double) throws {
        try ShareUpdate(publicExpiresIn: seconds).validate()
    }
}
