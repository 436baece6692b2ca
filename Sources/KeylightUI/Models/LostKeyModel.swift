import Foundation
import Keylight

/// "Lost your key?": the buyer's address goes to the server, which mails every key bought with
/// it. The answer is the same whether or not the address bought anything.
@MainActor
public final class LostKeyModel: KeylightUIModel {
    public enum Phase: Hashable, Sendable {
        case entering
        case sending
        /// The notice to show (the same for every address).
        case sent(String)
        case failed(LicenseFailure)
    }

    public let manager: LicenseManager
    public var email = "" { willSet { changing() } }
    public private(set) var phase: Phase = .entering { willSet { changing() } }

    public init(manager: LicenseManager, strings: UIStrings = UIStrings()) {
        self.manager = manager
        super.init(strings: strings)
    }

    /// A plausible address: something@something.tld, no spaces, at most 254 characters.
    public var isValidEmail: Bool {
        let text = email.trimmingCharacters(in: .whitespacesAndNewlines)
        guard text.utf8.count <= 254, !text.contains(where: \.isWhitespace) else { return false }
        let parts = text.split(separator: "@", omittingEmptySubsequences: false)
        guard parts.count == 2, !parts[0].isEmpty else { return false }
        let domain = parts[1].split(separator: ".", omittingEmptySubsequences: false)
        return domain.count >= 2 && domain.allSatisfy { !$0.isEmpty }
    }

    public var emailHint: String? {
        email.isEmpty || isValidEmail ? nil : strings[.emailInvalid]
    }

    public var canSend: Bool {
        guard isValidEmail else { return false }
        if case .sending = phase { return false }
        return true
    }

    public func send() async {
        guard canSend else { return }
        let address = email.trimmingCharacters(in: .whitespacesAndNewlines)
        phase = .sending
        do {
            try await manager.requestLostKey(email: address)
            phase = .sent(strings.format(.lostKeySent, address))
        } catch {
            phase = .failed(LicenseFailure((error as? KeylightError) ?? .transient("\(error)"), strings: strings, renewURL: nil,
                                    supportEmail: manager.configuration.branding?.supportEmail))
        }
    }
}
