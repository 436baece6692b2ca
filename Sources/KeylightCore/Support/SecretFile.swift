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
        guard ok else {
            let failure = errno == 0 ? savedErrno : errno
            unlink(temporary)
            throw .cannotWrite(path, errno: failure)
        }
        if !overwrite {
            // link() puts the file in place only if nothing is there, in one step: two writers
            // (threads, or an app and its extension) racing to create a key cannot both win, as
            // they could between a check and a rename. File systems without hard links fall back.
            if link(temporary, path) == 0 {
                unlink(temporary)
                return
            }
            let failure = errno
            if failure == EEXIST {
                unlink(temporary)
                throw .alreadyExists(path)
            }
            guard failure == EPERM || failure == ENOTSUP || failure == EOPNOTSUPP || failure == EXDEV else {
                unlink(temporary)
                throw .cannotWrite(path, errno: failure)
            }
        }
        guard rename(temporary, path) == 0 else {
            let failure = errno
            unlink(temporary)
            throw .cannotWrite(path, errno: failure)
        }
    }

    /// The contents of the file at `path`, or nil when there is no such file. A file longer than
    /// `limit` bytes is an error rather than an allocation of whatever size is on disk. Read with
    /// plain `open`/`read`: an app reads its secrets on every launch, and Foundation's file
    /// reading costs several times more on Linux.
    public static func read(_ path: String, limit: Int) throws(SecretFileError) -> Data? {
        let descriptor = open(path, O_RDONLY | O_CLOEXEC)
        guard descriptor >= 0 else {
            if errno == ENOENT { return nil }
            throw .cannotRead(path, errno: errno)
        }
        defer { close(descriptor) }
        var info = stat()
        guard fstat(descriptor, &info) == 0 else { throw .cannotRead(path, errno: errno) }
        let size = Int(info.st_size)
        guard size >= 0, size <= limit else { throw .tooLarge(path, limit: limit) }
        var data = Data(count: size)
        // Secret files are replaced by rename, never grown in place: fstat's size is the file's.
        let read = data.withUnsafeMutableBytes { buffer -> Int in
            var offset = 0
            while offset < buffer.count {
                let count = Foundation.read(descriptor, buffer.baseAddress! + offset, buffer.count - offset)
                if count < 0 {
                    if errno == EINTR { continue }
                    return -1
                }
                if count == 0 { break }
                offset += count
            }
            return offset
        }
        guard read >= 0 else { throw .cannotRead(path, errno: errno) }
        return read == size ? data : data.prefix(read)
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
    /// The system's error number, when the failure was the system's (a read before the first
    /// unlock on iOS is `EPERM`, which the SDK tells apart from a damaged file).
    public var errno: Int32? = nil

    public static func alreadyExists(_ path: String) -> Self {
        Self(path: path, reason: "already exists (refusing to overwrite a secret)")
    }

    public static func cannotWrite(_ path: String, errno code: Int32) -> Self {
        Self(path: path, reason: String(cString: strerror(code)), errno: code)
    }

    public static func cannotRead(_ path: String, errno code: Int32) -> Self {
        Self(path: path, reason: String(cString: strerror(code)), errno: code)
    }

    public static func tooLarge(_ path: String, limit: Int) -> Self {
        Self(path: path, reason: "longer than \(limit) bytes")
    }

    public var description: String { "\(path): \(reason)" }
}
