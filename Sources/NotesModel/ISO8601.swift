public import Foundation

/// ISO 8601 timestamps in UTC with milliseconds (`2026-11-22T14:05:09.123Z`), written
/// and read by hand: Foundation's format styles cost microseconds per call on Linux,
/// which dominated encoding pages of thousands of records.
public enum ISO8601 {
    public static func string(from date: Date) -> String {
        var bytes: [UInt8] = []
        bytes.reserveCapacity(24)
        append(date, to: &bytes)
        return String(decoding: bytes, as: UTF8.self)
    }

    /// Appends the 24 bytes of `string(from:)` without building a `String`, for
    /// writers that produce JSON bytes directly.
    public static func append(_ date: Date, to bytes: inout [UInt8]) {
        append(secondsSince1970: date.timeIntervalSince1970, to: &bytes)
    }

    /// The first and last instants the four-digit format can write, in milliseconds
    /// since 1970: 0000-01-01T00:00:00.000Z and 9999-12-31T23:59:59.999Z.
    static let writableMilliseconds: ClosedRange<Int64> = -62_167_219_200_000...253_402_300_799_999

    /// `append(_:to:)` for a time as stored (seconds since 1970), without a `Date`.
    ///
    /// Total: the time comes from stored rows and requests, so no value may trap here (a
    /// trap while encoding a stored value would stop notesd on every start). A time
    /// outside years 0000–9999 is written as the nearest end of that range; NaN as 1970.
    public static func append(secondsSince1970 seconds: Double, to bytes: inout [UInt8]) {
        let totalMilliseconds = clampedMilliseconds(seconds)
        var days = totalMilliseconds >= 0 ? totalMilliseconds / 86_400_000 : (totalMilliseconds - 86_399_999) / 86_400_000
        let msOfDay = totalMilliseconds - days * 86_400_000
        // Civil date from days since 1970-01-01 (Howard Hinnant's algorithm).
        days += 719_468
        let era = (days >= 0 ? days : days - 146_096) / 146_097
        let dayOfEra = days - era * 146_097
        let yearOfEra = (dayOfEra - dayOfEra / 1460 + dayOfEra / 36524 - dayOfEra / 146_096) / 365
        let dayOfYear = dayOfEra - (365 * yearOfEra + yearOfEra / 4 - yearOfEra / 100)
        let mp = (5 * dayOfYear + 2) / 153
        let day = dayOfYear - (153 * mp + 2) / 5 + 1
        let month = mp < 10 ? mp + 3 : mp - 9
        let year = yearOfEra + era * 400 + (month <= 2 ? 1 : 0)

        func put(_ value: Int64, _ width: Int, then separator: UInt8) {
            var divisor: Int64 = 1
            for _ in 1..<width { divisor *= 10 }
            var rest = value
            while divisor > 0 {
                bytes.append(UInt8(ascii: "0") + UInt8(truncatingIfNeeded: (rest / divisor) % 10))
                rest %= divisor
                divisor /= 10
            }
            bytes.append(separator)
        }
        put(year, 4, then: UInt8(ascii: "-"))
        put(month, 2, then: UInt8(ascii: "-"))
        put(day, 2, then: UInt8(ascii: "T"))
        put(msOfDay / 3_600_000, 2, then: UInt8(ascii: ":"))
        put(msOfDay / 60_000 % 60, 2, then: UInt8(ascii: ":"))
        put(msOfDay / 1000 % 60, 2, then: UInt8(ascii: "."))
        put(msOfDay % 1000, 3, then: UInt8(ascii: "Z"))
    }

    /// Milliseconds since 1970 of `seconds`, rounded down and clamped to what the format
    /// can write; never traps, whatever the input (infinities, NaN, ±1e308).
    static func clampedMilliseconds(_ seconds: Double) -> Int64 {
        guard !seconds.isNaN else { return 0 }
        let milliseconds = (seconds * 1000).rounded(.down)
        let range = writableMilliseconds
        if milliseconds <= Double(range.lowerBound) { return range.lowerBound }
        if milliseconds >= Double(range.upperBound) { return range.upperBound }
        return Int64(milliseconds)
    }

    /// Parses what `string(from:)` writes (milliseconds optional); `nil` otherwise.
    public static func date(from text: String) -> Date? {
        let b = Array(text.utf8)
        guard b.count == 20 || b.count == 24, b[4] == UInt8(ascii: "-"), b[7] == UInt8(ascii: "-"), b[10] == UInt8(ascii: "T"),
            b[13] == UInt8(ascii: ":"), b[16] == UInt8(ascii: ":"), b.last == UInt8(ascii: "Z")
        else { return nil }
        func number(_ range: Range<Int>) -> Int64? {
            var value: Int64 = 0
            for index in range {
                guard b[index] >= UInt8(ascii: "0"), b[index] <= UInt8(ascii: "9") else { return nil }
                value = value * 10 + Int64(b[index] - UInt8(ascii: "0"))
            }
            return value
        }
        guard let year = number(0..<4), let month = number(5..<7), let day = number(8..<10),
            let hour = number(11..<13), let minute = number(14..<16), let second = number(17..<19),
            (1...12).contains(month), (1...31).contains(day), hour < 24, minute < 60, second < 61
        else { return nil }
        var milliseconds: Int64 = 0
        if b.count == 24 {
            guard b[19] == UInt8(ascii: "."), let ms = number(20..<23) else { return nil }
            milliseconds = ms
        }
        // Days since 1970-01-01 from a civil date (Howard Hinnant's algorithm).
        let y = month <= 2 ? year - 1 : year
        let era = (y >= 0 ? y : y - 399) / 400
        let yearOfEra = y - era * 400
        let dayOfYear = (153 * (month > 2 ? month - 3 : month + 9) + 2) / 5 + day - 1
        let dayOfEra = yearOfEra * 365 + yearOfEra / 4 - yearOfEra / 100 + dayOfYear
        let days = era * 146_097 + dayOfEra - 719_468
        let seconds = days * 86_400 + hour * 3600 + minute * 60 + second
        return Date(timeIntervalSince1970: Double(seconds) + Double(milliseconds) / 1000)
    }
}
