import Foundation
import Keylight
#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif

/// What `--app` reads from the bundle's Info.plist.
struct AppBundleInfo: Equatable {
    var releasedAt: Int64
    var version: String?
    var shortVersion: String?
    /// The SDK reads no number there (only a date or text), so the app would apply no release date.
    var releaseDateIsNumber: Bool

    static func read(app path: String) throws -> AppBundleInfo {
        let plistPath = URL(fileURLWithPath: path).appendingPathComponent("Contents/Info.plist").path
        guard let data = FileManager.default.contents(atPath: plistPath) else {
            throw InputFailure("\(plistPath): cannot be read (--app is the built .app bundle)")
        }
        return try parse(data, source: plistPath)
    }

    /// An XML or binary property list.
    static func parse(_ data: Data, source: String) throws -> AppBundleInfo {
        let object: Any
        do {
            object = try PropertyListSerialization.propertyList(from: data, options: [], format: nil)
        } catch {
            throw InputFailure("\(source) is not a property list")
        }
        guard let plist = object as? [String: Any] else { throw InputFailure("\(source) is not a dictionary") }
        guard let value = plist["KeylightReleaseDate"] else {
            throw InputFailure("\(source) has no KeylightReleaseDate: add it (such as 2026-11-22) so the app and the server agree on the build's date, or give --released-at")
        }
        let date = try ReleaseDateValue.unixSeconds(value, name: "KeylightReleaseDate in \(source)")
        return AppBundleInfo(
            releasedAt: date.seconds, version: plist["CFBundleVersion"] as? String,
            shortVersion: plist["CFBundleShortVersionString"] as? String, releaseDateIsNumber: date.isNumber
        )
    }
}

/// A `KeylightReleaseDate` value in whole Unix seconds.
enum ReleaseDateValue {
    /// The server's range for released_at, widened to 2100 (it also refuses dates over a year ahead).
    static let plausible: ClosedRange<Int64> = 946_684_800...4_102_444_800

    /// A plist date; text as the SDK reads it (`2026-11-22`, UTC midnight, or ISO 8601 with a
    /// time), so released_at is the very second the app compares; or a number of Unix seconds.
    static func unixSeconds(_ value: Any, name: String) throws -> (seconds: Int64, isNumber: Bool) {
        if let date = value as? Date { return (Int64(date.timeIntervalSince1970.rounded(.down)), false) }
        if let text = value as? String {
            guard let date = Configuration.releaseDate(text) else {
                throw InputFailure("\(name) is \"\(text)\", not a date such as 2026-11-22 or 2026-11-22T09:30:00Z")
            }
            return (Int64(date.timeIntervalSince1970.rounded(.down)), false)
        }
        guard let seconds = number(value) else {
            throw InputFailure("\(name) is neither a date, nor text such as 2026-11-22, nor a number of Unix seconds")
        }
        guard seconds.isFinite, plausible.contains(Int64(exactly: seconds.rounded(.down)) ?? -1) else {
            let hint = seconds.isFinite && plausible.contains(Int64(exactly: (seconds / 1_000).rounded(.down)) ?? -1) ? " (milliseconds? it is Unix seconds)" : ""
            throw InputFailure("\(name) is \(seconds), not Unix seconds between 2000 and 2100\(hint)")
        }
        return (Int64(seconds.rounded(.down)), true)
    }

    /// A plist number, whichever way the platform's Foundation hands it over.
    private static func number(_ value: Any) -> Double? {
        if let whole = value as? Int64 { return Double(whole) }
        if let whole = value as? Int { return Double(whole) }
        if let real = value as? Double { return real }
        return (value as? NSNumber)?.doubleValue
    }
}

/// The file to upload, opened before any request so that a missing, unreadable or empty file
/// fails first; read by position (`pread`) while it streams.
struct UploadFile {
    let path: String
    let descriptor: Int32
    let length: Int64

    static func opening(_ path: String) throws -> UploadFile {
        var isDirectory: ObjCBool = false
        guard FileManager.default.fileExists(atPath: path, isDirectory: &isDirectory) else { throw InputFailure("\(path): no such file") }
        guard !isDirectory.boolValue else { throw InputFailure("\(path) is a folder: give the archive buyers download (.zip, .dmg, .pkg)") }
        let descriptor = open(path, O_RDONLY | O_CLOEXEC)
        guard descriptor >= 0 else { throw InputFailure("\(path): cannot be read: \(String(cString: strerror(errno)))") }
        let length = Int64(lseek(descriptor, 0, SEEK_END))
        guard length > 0 else {
            close(descriptor)
            throw InputFailure(length == 0 ? "\(path) is empty" : "\(path): cannot be read to its end")
        }
        return UploadFile(path: path, descriptor: descriptor, length: length)
    }

    func closeDescriptor() {
        close(descriptor)
    }
}
