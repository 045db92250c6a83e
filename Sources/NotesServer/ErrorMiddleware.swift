import Hummingbird
import Logging
import NotesModel

/// Turns every error that escapes a route into the JSON error body of SPEC section 8,
/// so clients see one shape whatever failed; unexpected errors are logged and become
/// `internalError` without leaking details.
struct ErrorMiddleware: RouterMiddleware {
    typealias Context = NotesRequestContext

    func handle(_ request: Request, context: Context, next: (Request, Context) async throws -> Response) async throws -> Response {
        do {
            return try await next(request, context)
        } catch let error as NotesError {
            if error.code == .internalError {
                context.logger.error("internal error", metadata: ["message": "\(error.message)"])
            }
            return try error.response(from: request, context: context)
        } catch let error as HTTPError {
            let code: NotesError.Code = switch error.status {
            case .notFound: .unknownItem
            case .contentTooLarge: .limitExceeded
            case .unauthorized: .notAuthenticated
            case .forbidden: .permissionFailure
            case .methodNotAllowed, .badRequest: .invalidArguments
            default: .internalError
            }
            let message = error.status == .notFound
                ? "There is no \(request.method) \(request.uri.path) in this API; see docs/openapi.yaml."
                : (error.body ?? error.status.reasonPhrase)
            return try NotesError(code, message).response(from: request, context: context)
        } catch {
            context.logger.error("unhandled error", metadata: ["error": "\(error)"])
            return try NotesError(.internalError, "The server failed; the error is in its log.").response(from: request, context: context)
        }
    }
}
