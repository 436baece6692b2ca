import Foundation
#if canImport(Glibc)
import Glibc
#elseif canImport(Musl)
import Musl
#elseif canImport(Darwin)
import Darwin
#endif

/// Writes files that hold secrets: created with mode 0600 from the first byte (never widened
/// by the umask or a later chmod), flushed to disk, and put in place by an atomic rename.
public enum SecretFile {
    /// Writes `data` to `path`. With `overwrite == false` an existing file is an error, so a
    /// private key is never replaced by accident.
    public static func write(_ data: Data, to path: String, overwrite: Bool = false) throws(SecretFileError) {
        if !overwrite && FileManager.default.fileExists(atPath: path) {
            throw .alreadyExists(path)
        }
        let directory = (path as NSString).deletingLastPathComponent
        let temporary = (directory.isEmpty ? "." : directory) + "/.\((path as NSString).lastPathComponent).\(UUID().uuidString).tmp"
        let descriptor = open(temporary, O_WRONLY | O_CREAT | O_EXCL, 0o600)
        guard descriptor >= 0 else { throw .cannotWrite(path, errno: errno) }
        var ok = fchmod(descriptor, 0o600) == 0
        if ok {
            ok = data.withUnsafeBytes { buffer -> Bool in
                var offset = 0
                while offset < buffer.count {
                    let written = Foundation.write(descriptor, buffer.baseAddress! + offset, buffer.count - offset)
                    if written < 0 {
                        if errno == EINTR { continue }
                        return false
                    }
                    offset += written
                }
                return true
            }
        }
        let savedErrno = errno
        ok = ok && fsync(descriptor) == 0
        close(descriptor)
        guard ok, rename(temporary, path) == 0 else {
            let failure = errno == 0 ? savedErrno : errno
            unlink(temporary)
            throw .cannotWrite(path, errno: failure)
        }
    }

    /// The permission bits of the file at `path` (for example `0o600`), or nil if it cannot be read.
    public static func permissions(of path: String) -> Int? {
        var info = stat()
        guard stat(path, &info) == 0 else { return nil }
        return Int(info.st_mode & 0o777)
    }
}

/// Why a secret file could not be written.
public struct SecretFileError: Error, Hashable, Sendable, CustomStringConvertible {
    public let path: String
    public let reason: String

    public static func alreadyExists(_ path: String) -> Self {
        Self(path: path, reason: "already exists (refusing to overwrite a secret)")
    }

    public static func cannotWrite(_ path: String, errno code: Int32) -> Self {
        Self(path: path, reason: String(cString: strerror(code)))
    }

    public var description: String { "\(path): \(reason)" }
}
