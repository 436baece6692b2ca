import HTTPTypes
import Hummingbird
import Logging

/// `/reminders/unsubscribe?token=…`: the one-click opt-out of a reminder mail's
/// `List-Unsubscribe` header (RFC 8058) and footer link. The token names the license
/// (``UnsubscribeToken``); no sign-in.
///
/// - `POST` with the form body `List-Unsubscribe=One-Click` (what a mail client's own
///   "Unsubscribe" sends, and the page's button) turns the license's reminder mails off, audited
///   the first time, and answers 200. Again: 200, nothing changes.
/// - `GET` only shows the page with that button: mail scanners and link previews fetch every link
///   in a mail, so opening the link must not opt anybody out.
/// - A token that is not the server's, was altered or names no license is 404 (as an unknown Checkout
///   Session's pick-up is: the link is the capability); an expired one 410.
struct UnsubscribeRoutes: Sendable {
    let reminders: ReminderService
    let renderer: DashboardRenderer
    let logger: Logger

    /// The one field the form carries, and room for a mail client's own encoding of it.
    static let maxFormBytes = 4 * 1024

    func register(on router: some RouterMethods<KeylightRequestContext>) {
        router.get("/reminders/unsubscribe") { request, _ in
            await answer(request) { token in
                let recipient = try await reminders.recipient(token: token)
                return UnsubscribeView(recipient, token: token, done: recipient.unsubscribed)
            }
        }
        router.post("/reminders/unsubscribe") { request, _ in
            var request = request
            let form: PortalForm
            do {
                form = try await PortalForm.read(&request, limit: Self.maxFormBytes)
            } catch let error as APIError {
                return renderer.page("reminders_unsubscribe", UnsubscribeView(problem: error.message), status: error.status)
            }
            return await answer(request) { token in
                guard form["List-Unsubscribe"] == "One-Click" else { throw UnsubscribeProblem.notOneClick }
                return UnsubscribeView(try await reminders.unsubscribe(token: token), token: token, done: true)
            }
        }
    }

    /// The page `action` makes for the link's token, or the page saying why the link does not work.
    private func answer(_ request: Request, _ action: (String) async throws -> UnsubscribeView) async -> Response {
        let status: HTTPResponse.Status, problem: String
        do {
            guard let token = request.uri.queryParameters.get("token"), !token.isEmpty else { throw UnsubscribeToken.Refusal.invalid }
            return renderer.page("reminders_unsubscribe", try await action(token))
        } catch UnsubscribeToken.Refusal.invalid {
            (status, problem) = (.notFound, "This link is not valid. Copy the whole link from the mail, or use the one in the newest reminder.")
        } catch UnsubscribeToken.Refusal.expired {
            (status, problem) = (.gone, "This link has expired. Use the link in the newest reminder mail.")
        } catch UnsubscribeProblem.notOneClick {
            (status, problem) = (.badRequest, "Use the button on this page to stop reminder mails.")
        } catch {
            logger.error("reminder opt-out failed", metadata: ["error": "\(type(of: error))"])
            (status, problem) = (.serviceUnavailable, "Something went wrong on our side; try again in a moment.")
        }
        return renderer.page("reminders_unsubscribe", UnsubscribeView(problem: problem), status: status)
    }
}

/// A POST without `List-Unsubscribe=One-Click`.
enum UnsubscribeProblem: Error {
    case notOneClick
}
