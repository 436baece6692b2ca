import Foundation

/// A new, empty directory under the system's temporary directory, named `<label>-<uuid>`.
/// Tests leave it behind: the system cleans its temporary directory, and a failing test's
/// files are then still there to look at.
public func temporaryDirectory(_ label: String = "keylight-tests") throws -> URL {
    let url = FileManager.default.temporaryDirectory.appendingPathComponent("\(label)-\(UUID().uuidString)")
    try FileManager.default.createDirectory(at: url, withIntermediateDirectories: true)
    return url
}
