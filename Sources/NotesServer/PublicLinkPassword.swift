import Foundation
import HTTPTypes
import Hummingbird
import NotesExport
import NotesModel

/// The page a public link with a password shows, the form it posts, and the cookie
/// the right password earns (the pass itself is the store's `LinkPass`).
extension PublicPageController {
    /// The password posted from the page that asks for it: right, and the browser gets
    /// the link's cookie and goes back (303) to the address it asked for; wrong, or too
    /// many wrong, and the page asks again saying so.
    func unlock(_ request: Request, _ context: NotesRequestContext) async throws -> Response {
        guard let token = context.parameters.get("token") else { throw NotesError(.unknownItem, "There is no public page at this address.") }
        // (1,024 characters of 4 UTF-8 bytes each, percent-encoded, fit.)
        let body = try await request.body.collect(upTo: 16_384)
        guard let password = Self.formField("password", in: String(buffer: body)) else {
            return passwordPage(token: token, status: .badRequest, message: "Type the password, then press Open.")
        }
        let unlocked: (pass: String, expires: Date)?
        switch await unlockLink(token, password: password, client: clients.of(request, channel: context.channel)) {
        case .success(let result): unlocked = result
        case .failure(let error) where error.code == .permissionFailure:
            return passwordPage(token: token, status: .forbidden, message: "That is not the password of this link. Check it and try again.")
        case .failure(let error) where error.code == .requestRateLimited:
            await refusals.hold(CallerBudgetMiddleware.caller(of: request, context: context, clients: clients))
            var response = passwordPage(token: token, status: .tooManyRequests, message: error.message)
            if let wait = error.retryAfter { response.headers[.retryAfter] = String(wait) }
            return response
        case .failure(let error) where error.code == .invalidArguments:
            return passwordPage(token: token, status: .badRequest, message: error.message)
        case .failure(let error): throw error
        }
        var headers: HTTPFields = [.location: request.uri.path, .cacheControl: "no-store"]
        if let unlocked {
            headers[.setCookie] = Self.setCookie(pass: unlocked.pass, token: token, expires: unlocked.expires, secure: secureCookies)
        }
        return Response(status: .seeOther, headers: headers)
    }

    private func unlockLink(_ token: String, password: String, client: String?) async -> Result<(pass: String, expires: Date)?, NotesError> {
        do {
            return .success(try await store.unlockPublicLink(urlToken: token, password: password, client: client))
        } catch {
            return .failure(error)
        }
    }

    func passwordPage(token: String, status: HTTPResponse.Status, message: String?) -> Response {
        var headers = Self.securityHeaders
        headers[.contentSecurityPolicy] = Template.passwordPagePolicy
        headers[.contentType] = "text/html; charset=utf-8"
        headers[.cacheControl] = "no-store"
        let html = Template.passwordPage(message: message, root: "/s/\(token)/")
        return Response(status: status, headers: headers, body: .init(byteBuffer: ByteBuffer(string: html)))
    }

    /// The cookie that carries a link's pass: only for this link's pages, never to
    /// scripts (there are none) or other sites, and gone when the pass ends.
    static func setCookie(pass: String, token: String, expires: Date, secure: Bool) -> String {
        let formatter = DateFormatter()
        formatter.locale = Locale(identifier: "en_US_POSIX")
        formatter.timeZone = TimeZone(identifier: "GMT")
        formatter.dateFormat = "EEE, dd MMM yyyy HH:mm:ss 'GMT'"
        let maxAge = max(0, Int(expires.timeIntervalSinceNow.rounded(.down)))
        return "\(passCookie)=\(pass); Path=/s/\(token); Expires=\(formatter.string(from: expires)); Max-Age=\(maxAge); HttpOnly; SameSite=Strict"
            + (secure ? "; Secure" : "")
    }

    /// A cookie's value from the request's `Cookie` headers.
    static func cookie(_ name: String, in request: Request) -> String? {
        for header in request.headers[values: .cookie] {
            for pair in header.split(separator: ";") {
                let parts = pair.split(separator: "=", maxSplits: 1, omittingEmptySubsequences: false)
                if parts.count == 2, parts[0].trimmingCharacters(in: .whitespaces) == name {
                    return parts[1].trimmingCharacters(in: .whitespaces)
                }
            }
        }
        return nil
    }

    /// A field of an `application/x-www-form-urlencoded` body (`+` is a space).
    static func formField(_ name: String, in body: String) -> String? {
        for pair in body.split(separator: "&") {
            let parts = pair.split(separator: "=", maxSplits: 1, omittingEmptySubsequences: false)
            guard parts.count == 2, parts[0] == name else { continue }
            let value = parts[1].replacingOccurrences(of: "+", with: " ").removingPercentEncoding
            return value?.isEmpty == false ? value : nil
        }
        return nil
    }
}
