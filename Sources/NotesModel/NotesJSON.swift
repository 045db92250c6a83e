public import Foundation

/// The JSON conventions shared by server and client: ISO 8601 dates with fractional
/// seconds, base64 bytes, keys in declaration order (compact and fast; scripts read by key).
public enum NotesJSON {
    public static func encoder() -> JSONEncoder {
        let encoder = JSONEncoder()
        encoder.dateEncodingStrategy = .custom { date, encoder in
            var container = encoder.singleValueContainer()
            try container.encode(ISO8601.string(from: date))
        }
        encoder.outputFormatting = [.withoutEscapingSlashes]
        return encoder
    }

    public static func decoder() -> JSONDecoder {
        let decoder = JSONDecoder()
        decoder.dateDecodingStrategy = .custom { decoder in
            let container = try decoder.singleValueContainer()
            let text = try container.decode(String.self)
            if let date = ISO8601.date(from: text) { return date }
            if let date = try? Date(text, strategy: .iso8601) { return date }
            throw DecodingError.dataCorruptedError(in: container, debugDescription: "\(text) is not an ISO 8601 date")
        }
        return decoder
    }

    /// The error body of SPEC section 8: `{"error": {"code", "message", ...}}`.
    public struct ErrorBody: Codable, Sendable {
        public struct Detail: Codable, Sendable {
            public var code: NotesError.Code
            public var message: String
            public var serverRecord: Record?
            public var items: [NotesError.ItemError]?
        }

        public var error: Detail

        public init(_ error: NotesError) {
            self.error = Detail(
                code: error.code, message: error.message, serverRecord: error.serverRecord,
                items: error.itemErrors.isEmpty ? nil : error.itemErrors)
        }

        public var notesError: NotesError {
            NotesError(error.code, error.message, serverRecord: error.serverRecord, itemErrors: error.items ?? [])
        }
    }
}
