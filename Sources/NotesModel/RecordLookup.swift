/// One answer to a lookup by record names, cut the same way by every backend.
///
/// A name asked for twice is read once, and reading stops once the content gathered
/// passes `Limits.lookupAnswerBytes` (the first record always fits, whatever its size):
/// a caller that asks for the same 4 MiB note 2,000 times gets it once, not an 8 GiB
/// answer. The names not reached come back as `remaining`, in the order asked, for
/// the next request.
package struct RecordLookup: Sendable {
    /// The names asked for, each once, in the order first asked.
    private let names: [String]
    private var next = 0
    private var bytes = 0
    private var records: [Record] = []

    /// Checks the request's size and drops repeated names.
    package init(asking recordNames: [String]) throws(NotesError) {
        guard recordNames.count <= Limits.maxLookupNames else {
            throw NotesError(.limitExceeded, "Look up at most \(Limits.maxLookupNames) records at once.")
        }
        var seen = Set<String>()
        names = recordNames.filter { seen.insert($0).inserted }
    }

    /// The next name to read, or `nil` once every name was read or the answer is full.
    package mutating func nextName() -> String? {
        guard next < names.count, bytes <= Limits.lookupAnswerBytes else { return nil }
        defer { next += 1 }
        return names[next]
    }

    /// What reading the last name handed out found: a record the caller may read, or
    /// `nil` when there is none (or none they may read, which must look the same).
    package mutating func found(_ record: Record?) {
        guard let record else { return }
        bytes += record.contentSize
        records.append(record)
    }

    package var answer: API.Records {
        API.Records(records: records, remaining: Array(names[next...]))
    }
}
