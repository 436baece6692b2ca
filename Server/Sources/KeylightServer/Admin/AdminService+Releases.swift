import Foundation

/// Releases of a product (issue 51): drafts made with their versions, channel, release date
/// and notes; published once they have a file; yanked to leave every feed.
extension AdminService {
    static let releaseNotesLimit = 32 * 1_024

    func createRelease(tenantId: String, productId: String, _ body: CreateReleaseRequest, actor: AuditActor) async throws -> Release {
        _ = try await requireProduct(tenantId: tenantId, productId: productId)
        let now = clock.unixSeconds
        let version = try ReleaseFields.version(body.version, "version")
        let shortVersion = try ReleaseFields.text(body.short_version, "short_version", max: 64)
        let channel = try ReleaseFields.channel(body.channel)
        let releasedAt = body.released_at ?? now
        guard (946_684_800...(now + 366 * 86_400)).contains(releasedAt) else {
            throw APIError.invalidRequest("released_at must be a Unix time between 2000 and a year from now.")
        }
        let minSystem = try body.min_system_version.map { value throws(APIError) in try ReleaseFields.systemVersion(value) }
        let notes = body.notes_markdown ?? ""
        guard notes.utf8.count <= Self.releaseNotesLimit else { throw APIError.invalidRequest("notes_markdown is over \(Self.releaseNotesLimit) bytes.") }
        let criticalBelow = try body.critical_below.map { value throws(APIError) in try ReleaseFields.version(value, "critical_below") }
        if let seconds = body.phased_rollout_interval_seconds { _ = try Field.integer(seconds, "phased_rollout_interval_seconds", in: 60...(30 * 86_400)) }
        let release = Release(
            id: "rel_" + RandomUUID.compactLowercaseString().prefix(20),
            tenantId: tenantId, productId: productId, version: version, shortVersion: shortVersion, channel: channel,
            releasedAt: releasedAt, minSystemVersion: minSystem, notesMarkdown: notes,
            critical: (body.critical ?? false) || criticalBelow != nil, criticalBelow: criticalBelow,
            phasedRolloutSeconds: body.phased_rollout_interval_seconds, state: .draft, createdAt: now
        )
        guard try await database.insertRelease(release, actor: actor) else {
            throw APIError.conflict("Version \(version) already exists in the \(channel) channel.")
        }
        return release
    }

    func release(tenantId: String, productId: String, id: String) async throws -> Release {
        guard id.utf8.count <= 64, let release = try await database.release(tenantId: tenantId, productId: productId, id: id) else {
            throw APIError.notFound("Release")
        }
        return release
    }

    func releases(tenantId: String, productId: String, channel: String?) async throws -> [Release] {
        _ = try await requireProduct(tenantId: tenantId, productId: productId)
        return try await database.releases(tenantId: tenantId, productId: productId, channel: try channel.map { value throws(APIError) in try ReleaseFields.channel(value) }, limit: 500)
    }

    /// Each release with its artifacts, for answers.
    func releaseBodies(_ releases: [Release]) async throws -> [ReleaseBody] {
        let artifacts = Dictionary(grouping: try await database.artifacts(releaseIds: releases.map(\.id)), by: \.releaseId)
        return releases.map { ReleaseBody($0, artifacts: artifacts[$0.id] ?? []) }
    }

    func moveRelease(tenantId: String, productId: String, id: String, to state: Release.State, actor: AuditActor) async throws -> Release {
        switch try await database.moveRelease(tenantId: tenantId, productId: productId, id: id, to: state, now: clock.unixSeconds, actor: actor) {
        case .moved(let release): return release
        case .notFound: throw APIError.notFound("Release")
        case .noArtifact: throw APIError(status: .conflict, code: "NO_ARTIFACT", message: "Upload the release's file before publishing it.")
        case .wrongState(let current):
            throw APIError(status: .conflict, code: "RELEASE_STATE", message: "The release is \(current.rawValue): it cannot be \(state == .published ? "published" : "yanked").")
        }
    }
}

/// The checks of a release's fields.
enum ReleaseFields {
    /// A build version as Sparkle compares them: 1-64 of letters, digits, `.`, `-`, `+`.
    static func version(_ value: String?, _ name: String) throws(APIError) -> String {
        guard let value, !value.isEmpty else { throw .invalidRequest("Missing field \(name).") }
        guard value.utf8.count <= 64, value.utf8.allSatisfy({ $0 < 0x80 && (isAlphanumeric($0) || $0 == 0x2E || $0 == 0x2D || $0 == 0x2B) }) else {
            throw .invalidRequest("\(name) is 1-64 letters, digits, dots, dashes or plus signs.")
        }
        return value
    }

    /// Printable text without line breaks.
    static func text(_ value: String?, _ name: String, max: Int) throws(APIError) -> String {
        guard let value, !value.trimmingCharacters(in: .whitespaces).isEmpty else { throw .invalidRequest("Missing field \(name).") }
        guard value.utf8.count <= max, !value.unicodeScalars.contains(where: { $0.properties.generalCategory == .control }) else {
            throw .invalidRequest("\(name) is at most \(max) bytes of text on one line.")
        }
        return value
    }

    /// `stable` when absent; otherwise 1-32 of lower-case letters, digits and dashes.
    static func channel(_ value: String?) throws(APIError) -> String {
        guard let value, !value.isEmpty else { return Release.stableChannel }
        guard value.utf8.count <= 32, value.utf8.allSatisfy({ (0x61...0x7A).contains($0) || (0x30...0x39).contains($0) || $0 == 0x2D }) else {
            throw .invalidRequest("channel is 1-32 lower-case letters, digits or dashes.")
        }
        return value
    }

    /// A system version such as `13.0` or `14.2.1`.
    static func systemVersion(_ value: String) throws(APIError) -> String {
        let parts = value.split(separator: ".", omittingEmptySubsequences: false)
        guard (1...3).contains(parts.count), parts.allSatisfy({ (1...4).contains($0.count) && $0.allSatisfy { $0.isASCII && $0.isNumber } }) else {
            throw .invalidRequest("min_system_version is a version such as 13.0 or 14.2.1.")
        }
        return value
    }

    private static func isAlphanumeric(_ byte: UInt8) -> Bool {
        (0x30...0x39).contains(byte) || (0x41...0x5A).contains(byte) || (0x61...0x7A).contains(byte)
    }
}
