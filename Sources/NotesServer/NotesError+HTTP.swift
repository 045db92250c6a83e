public import Hummingbird
import Foundation
import NIOFoundationCompat
public import NotesModel
import NotesWork

extension NotesError: ResponseGenerator {}
extension NotesError: HTTPResponseError {
    /// HTTP statuses after CloudKit Web Services: 409 for "changed or exists",
    /// 413 for limits, 403 for rights, 401 for identity.
    public var status: HTTPResponse.Status {
        switch code {
        case .invalidArguments, .changeTokenExpired: .badRequest
        case .notAuthenticated: .unauthorized
        case .permissionFailure: .forbidden
        case .unknownItem, .zoneNotFound: .notFound
        case .serverRecordChanged, .batchRequestFailed, .alreadyShared, .constraintViolation, .folderNotEmpty, .referenceViolation: .conflict
        case .limitExceeded, .quotaExceeded: .contentTooLarge
        case .requestRateLimited: .tooManyRequests
        case .serviceUnavailable: .serviceUnavailable
        case .internalError: .internalServerError
        }
    }

    public func response(from request: Request, context: some RequestContext) throws -> Response {
        var response = JSONResponse.make(NotesJSON.ErrorBody(self), status: status)
        if code == .notAuthenticated {
            response.headers[.wwwAuthenticate] = "Bearer"
        }
        if let retryAfter {
            response.headers[.retryAfter] = String(max(1, retryAfter))
        }
        return response
    }
}

/// JSON responses with the API's encoder (`NotesJSON`).
enum JSONResponse {
    /// A response whose JSON body is already written.
    static func raw(_ bytes: [UInt8], status: HTTPResponse.Status = .ok) -> Response {
        Response(
            status: status,
            headers: [.contentType: "application/json; charset=utf-8", .cacheControl: "no-store"],
            body: .init(byteBuffer: ByteBuffer(bytes: bytes)))
    }

    static func make(_ value: some Encodable, status: HTTPResponse.Status = .ok) -> Response {
        let data = (try? NotesJSON.encoder().encode(value)) ?? Data(#"{"error":{"code":"internalError","message":"encoding failed"}}"#.utf8)
        return Response(
            status: status,
            headers: [.contentType: "application/json; charset=utf-8", .cacheControl: "no-store"],
            body: .init(byteBuffer: ByteBuffer(bytes: data)))
    }
}

extension Request {
    /// Reads and decodes the JSON body, with the errors a caller can act on: 413 past
    /// the size limit, 400 naming what is wrong with the JSON.
    mutating func decodeJSON<T: Decodable & Sendable>(_ type: T.Type) async throws(NotesError) -> T {
        let buffer: ByteBuffer
        do {
            buffer = try await collectBody(upTo: Limits.maxRequestBytes)
        } catch {
            throw NotesError(.limitExceeded, "The request body is larger than \(Limits.maxRequestBytes / 1024 / 1024) MiB; send smaller batches.")
        }
        guard buffer.readableBytes > 0 else {
            throw NotesError(.invalidArguments, "The request has no body; send a JSON object.")
        }
        do {
            // The body's own bytes, not a copy: a 16 MB batch held twice until decoded
            // took a quarter of notesd's memory with four such requests under way.
            let data = buffer.getData(at: buffer.readerIndex, length: buffer.readableBytes, byteTransferStrategy: .noCopy) ?? Data()
            // A large body (a batch of notes) decodes for tens of milliseconds: on a thread
            // of its own that gives way to others' small requests, in turns by caller, not
            // on the event loop that carries other callers' connections.
            guard data.count > Self.decodedInPlace else { return try NotesJSON.decoder().decode(T.self, from: data) }
            return try await Self.decoding.withPermit { try await Blocking.background { try NotesJSON.decoder().decode(T.self, from: data) } }
        } catch let error as NotesError {
            throw error
        } catch let error as DecodingError {
            throw NotesError(.invalidArguments, "The request body is not valid for this call: \(Self.describe(error))")
        } catch {
            throw NotesError(.invalidArguments, "The request body is not valid JSON.")
        }
    }

    /// Bodies up to this size are decoded where they arrived (microseconds).
    static let decodedInPlace = 64 * 1024
    static let decoding = FairGate(name: "request decoding", permits: max(1, ProcessInfo.processInfo.activeProcessorCount / 2), waitingPerAccount: 16)

    static func describe(_ error: DecodingError) -> String {
        func path(_ context: DecodingError.Context) -> String {
            let keys = context.codingPath.map { $0.intValue.map(String.init) ?? $0.stringValue }
            return keys.isEmpty ? "" : " at \(keys.joined(separator: "."))"
        }
        switch error {
        case .dataCorrupted(let context):
            return "malformed JSON\(path(context))."
        case .keyNotFound(let key, let context):
            return "the field \"\(key.stringValue)\" is missing\(path(context))."
        case .typeMismatch(_, let context), .valueNotFound(_, let context):
            return "a field has the wrong type\(path(context)): \(context.debugDescription)"
        @unknown default:
            return "it could not be decoded."
        }
    }
}
