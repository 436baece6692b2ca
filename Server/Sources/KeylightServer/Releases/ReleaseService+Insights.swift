/// A release as the dashboard's releases page shows it: its files, how often it was downloaded,
/// and how many licensed devices run it.
struct ReleaseFigures: Sendable {
    var release: Release
    var artifacts: [ReleaseArtifact]
    /// Downloads over every day (a resumed download is not counted again).
    var downloads: Int64
    /// Licensed devices seen in the last ``ReleaseService/activeDays`` days whose app version, as
    /// they last reported it, is this release's short version or build.
    var devices: Int
}

/// What raising the minimum macOS would do: of the licensed Macs seen lately, how many run an
/// older system, and how many never said which system they run.
struct StrandPreview: Sendable, Equatable {
    var minimumSystem: String
    var stranded: Int
    var macDevices: Int
    /// Macs whose telemetry carries no readable OS version: counted neither as stranded nor as safe.
    var unknownVersion: Int
}

/// The releases page's figures, from the insights' per-device days (issue 51, point 6).
extension ReleaseService {
    /// "Active" as the insights' longest window counts it.
    static let activeDays: Int64 = 30

    /// Every release of the product (drafts and yanked ones too), newest release date first.
    func releaseFigures(tenantId: String, productId: String) async throws -> [ReleaseFigures] {
        let releases = try await database.releases(tenantId: tenantId, productId: productId, channel: nil, limit: 500)
        guard !releases.isEmpty else { return [] }
        let ids = releases.map(\.id)
        let artifacts = Dictionary(grouping: try await database.artifacts(releaseIds: ids), by: \.releaseId)
        let downloads = try await database.downloadCounts(releaseIds: ids)
        var devicesByVersion: [String: Int] = [:]
        for combination in try await activeLicensedDevices(tenantId: tenantId, productId: productId) {
            guard let version = combination.telemetry.appVersion else { continue }
            devicesByVersion[version, default: 0] += combination.devices
        }
        return releases.map { release in
            // The Swift SDK reports CFBundleShortVersionString, other clients may report the build.
            // A device's last report holds one version, so the two sums never share a device.
            var devices = devicesByVersion[release.shortVersion] ?? 0
            if release.version != release.shortVersion { devices += devicesByVersion[release.version] ?? 0 }
            return ReleaseFigures(release: release, artifacts: artifacts[release.id] ?? [], downloads: downloads[release.id] ?? 0, devices: devices)
        }
    }

    /// The licensed Macs seen in the last ``activeDays`` days whose macOS is below `minimumSystem`
    /// (compared as Sparkle compares `sparkle:minimumSystemVersion`), out of all of them.
    func strandPreview(tenantId: String, productId: String, minimumSystem: String) async throws -> StrandPreview {
        guard let minimum = try? ReleaseFields.systemVersion(minimumSystem) else {
            throw APIError.invalidRequest("The minimum macOS is a version such as 13.0 or 14.2.1.")
        }
        var preview = StrandPreview(minimumSystem: minimum, stranded: 0, macDevices: 0, unknownVersion: 0)
        for combination in try await activeLicensedDevices(tenantId: tenantId, productId: productId) where Self.isMac(combination.telemetry.platform) {
            preview.macDevices += combination.devices
            guard let system = combination.telemetry.osVersion.flatMap(Self.leadingVersion) else {
                preview.unknownVersion += combination.devices
                continue
            }
            if SparkleVersion.compare(system, minimum) < 0 { preview.stranded += combination.devices }
        }
        return preview
    }

    /// Licensed devices seen from `today - 29` through today, each by what it sent on the last
    /// day it was seen (so a device that updated counts once, for its newer build).
    private func activeLicensedDevices(tenantId: String, productId: String) async throws -> [DeviceCombination] {
        let today = clock.unixSeconds / 86_400
        return try await database.deviceCombinations(tenantId: tenantId, productId: productId, fromDay: today - Self.activeDays + 1, toDay: today)
            .filter { $0.kind == .licensed }
    }

    /// How clients name macOS: the Swift SDK `macOS`, the Rust and C++ clients `macos`, and a
    /// Node-based client `darwin` (`process.platform`).
    static func isMac(_ platform: String?) -> Bool {
        guard let platform else { return false }
        return ["macos", "darwin", "osx", "mac os x"].contains(platform.lowercased())
    }

    /// The dotted number an OS version starts with (`14.2.1` of `14.2.1 (23B81)`); nil when it
    /// starts otherwise, since a name would compare as older than every number.
    static func leadingVersion(_ text: String) -> String? {
        var version = text.prefix { ($0.isASCII && $0.isNumber) || $0 == "." }
        while version.last == "." { version.removeLast() }
        guard let first = version.first, first.isNumber else { return nil }
        return String(version)
    }
}
