import Hummingbird
import Logging
import NotesModel

/// Turns every error that escapes a route into the JSON error body of SPEC section 8,
/// so clients see one shape whatever failed; unexpected errors are logged and become
/// `internalError` without leaking details.
struct ErrorMiddleware: RouterMiddleware {
    typealias Context = NotesRequestContext
    /// Known paths and their methods, for 405 answers.
    let routes: RouteTable
    /// When refusals are answered.
    let refusals: RefusalPace
    let clients: ClientAddress

    func handle(_ request: Request, context: Context, next: (Request, Context) async throws -> Response) async throws -> Response {
        do {
            return try await next(request, context)
        } catch let error as NotesError {
            if error.code == .internalError {
                context.logger.error("internal error", metadata: ["message": "\(error.message)"])
            }
            if error.code == .requestRateLimited { await refusals.hold(CallerBudgetMiddleware.caller(of: request, context: context, clients: clients)) }
            return try error.response(from: request, context: context)
        } catch let error as HTTPError where error.status == .notFound && routes.methods(for: request.uri.path) != nil {
            let allowed = routes.methods(for: request.uri.path)!.map(\.rawValue).sorted()
            var response = try NotesError(
                .invalidArguments,
                "\(request.uri.path) does not answer \(request.method); it answers \(allowed.joined(separator: ", "))."
            )
            .response(from: request, context: context)
            response.status = .methodNotAllowed
            response.headers[.allow] = allowed.joined(separator: ", ")
            return response
        } catch let error as HTTPError {
            let code: NotesError.Code =
                switch error.status {
                case .notFound: .unknownItem
                case .contentTooLarge: .limitExceeded
                case .unauthorized: .notAuthenticated
                case .forbidden: .permissionFailure
                case .methodNotAllowed, .badRequest: .invalidArguments
                default: .internalError
                }
            let message =
                error.status == .notFound
                ? "There is no \(request.method) \(request.uri.path) in this API; see docs/openapi.yaml."
                : (error.body ?? error.status.reasonPhrase)
            return try NotesError(code, message).response(from: request, context: context)
        } catch {
            context.logger.error("unhandled error", metadata: ["error": "\(error)"])
            return try NotesError(.internalError, "The server failed; the error is in its log.").response(from: request, context: context)
        }
    }
}
