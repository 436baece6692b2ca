/// What an uploaded file is, told by its bytes, never by what the uploader calls it: Sparkle picks
/// its unarchiver by the saved file's extension, so a `.zip` that is really a disk image would
/// fail on every buyer's Mac.
enum ArtifactKind: String, Sendable, CaseIterable {
    case zip, dmg, pkg, tarGz = "tar.gz", tarXz = "tar.xz", tarBz2 = "tar.bz2", msi, exe, appImage = "AppImage", deb

    /// The name given to an artifact uploaded before names were kept.
    static let fallbackName = "download.bin"

    /// The extension a download is saved with.
    var fileExtension: String { rawValue }

    /// Sparkle's `sparkle:installationType`: packages run the installer, the rest replace the app.
    var sparkleInstallationType: String? { self == .pkg ? "package" : nil }

    /// Whether Sparkle can install it (what a `darwin` artifact must be).
    var isSparkleArchive: Bool { [.zip, .dmg, .pkg, .tarGz, .tarXz, .tarBz2].contains(self) }

    /// The kind told by the file's first bytes and its last 512 (a disk image's `koly` trailer), or nil.
    static func detect(head: [UInt8], tail: [UInt8]) -> ArtifactKind? {
        func starts(_ magic: [UInt8]) -> Bool { head.count >= magic.count && Array(head.prefix(magic.count)) == magic }
        if starts([0x50, 0x4B, 0x03, 0x04]) { return .zip }
        if starts(Array("xar!".utf8)) { return .pkg }
        if starts([0x1F, 0x8B]) { return .tarGz }
        if starts([0xFD, 0x37, 0x7A, 0x58, 0x5A, 0x00]) { return .tarXz }
        if starts(Array("BZh".utf8)) { return .tarBz2 }
        if starts([0xD0, 0xCF, 0x11, 0xE0, 0xA1, 0xB1, 0x1A, 0xE1]) { return .msi }
        if starts(Array("MZ".utf8)) { return .exe }
        if starts([0x7F, 0x45, 0x4C, 0x46]) { return .appImage }
        if starts(Array("!<arch>\ndebian".utf8)) { return .deb }
        if tail.count == 512, Array(tail.prefix(4)) == Array("koly".utf8) { return .dmg }
        return nil
    }

    /// The kind a file name claims by its extension, or nil.
    static func claimed(by fileName: String) -> ArtifactKind? {
        let lower = fileName.lowercased()
        if lower.hasSuffix(".tgz") { return .tarGz }
        if lower.hasSuffix(".txz") { return .tarXz }
        if lower.hasSuffix(".tbz") { return .tarBz2 }
        return allCases.sorted { $0.rawValue.count > $1.rawValue.count }.first { lower.hasSuffix("." + $0.rawValue.lowercased()) }
    }
}
