import Hummingbird
import HTTPTypes
import NotesModel

/// Names the API's major version on every answer (`Notes-API-Version`), so that a client
/// of another version says so instead of misreading answers.
struct APIVersionMiddleware: RouterMiddleware {
    typealias Context = NotesRequestContext
    static let field = HTTPField.Name(NotesVersion.apiHeader)!

    func handle(_ request: Request, context: Context, next: (Request, Context) async throws -> Response) async throws -> Response {
        var response = try await next(request, context)
        response.headers[Self.field] = String(NotesVersion.api)
        return response
    }
}
