import Crypto
import Foundation
import NIOCore
import _NIOFileSystem

/// Release files on disk (`--artifacts-dir`), each named by its SHA-256: `ab/abcdef…`. Folders
/// are 0700 and files 0600. An upload is written under `incoming/` and renamed into place only
/// once it is whole and checked, so a cut-off upload leaves nothing a download could reach, and
/// the partial file is removed.
///
/// Several processes on one PostgreSQL database share the folder (a path every process mounts);
/// the rename is atomic, and two uploads of the same bytes end as the same file.
struct ArtifactStore: Sendable {
    let directory: String
    private let fileSystem = FileSystem.shared
    private static let folderMode = FilePermissions(rawValue: 0o700)
    private static let fileMode = FilePermissions(rawValue: 0o600)

    init(directory: String) {
        self.directory = directory
    }

    /// A file written under `incoming/`, not yet in place.
    struct Received: Sendable {
        let temporaryPath: String
        let length: Int64
        let sha256: String
        /// The first 512 bytes and the last 512 (fewer for a short file): what the file is.
        let head: [UInt8]
        let tail: [UInt8]
    }

    enum ReceiveError: Error { case tooLarge, empty }

    /// Creates the folders (0700), and tightens them if they exist with a wider mode.
    func prepare() async throws {
        for path in [directory, directory + "/incoming"] {
            try await fileSystem.createDirectory(at: FilePath(path), withIntermediateDirectories: true, permissions: Self.folderMode)
            chmod(path, 0o700)
        }
    }

    /// Streams `body` to a new file, hashing it as it goes; stops with `tooLarge` past `limit`
    /// bytes. Any failure, the client's included, removes the partial file.
    func receive<Body: AsyncSequence>(_ body: Body, limit: Int64) async throws -> Received where Body.Element == ByteBuffer {
        let path = directory + "/incoming/" + UUID().uuidString.lowercased()
        do {
            var hasher = SHA256()
            var head: [UInt8] = []
            var tail: [UInt8] = []
            let length = try await fileSystem.withFileHandle(
                forWritingAt: FilePath(path), options: .newFile(replaceExisting: false, permissions: Self.fileMode)
            ) { handle in
                var offset: Int64 = 0
                for try await buffer in body {
                    offset += Int64(buffer.readableBytes)
                    guard offset <= limit else { throw ReceiveError.tooLarge }
                    buffer.withUnsafeReadableBytes { hasher.update(bufferPointer: $0) }
                    if head.count < 512 { head += buffer.readableBytesView.prefix(512 - head.count) }
                    tail = Array((tail + buffer.readableBytesView.suffix(512)).suffix(512))
                    _ = try await handle.write(contentsOf: buffer, toAbsoluteOffset: offset - Int64(buffer.readableBytes))
                }
                // Durable before the database says the file exists.
                try await handle.synchronize()
                return offset
            }
            guard length > 0 else { throw ReceiveError.empty }
            let digest = hasher.finalize().map { String(format: "%02x", $0) }.joined()
            return Received(temporaryPath: path, length: length, sha256: digest, head: head, tail: tail)
        } catch {
            await discard(path)
            throw error
        }
    }

    /// Moves a received file to its place by hash (the same bytes land on the same name).
    func commit(_ received: Received) async throws {
        let folder = directory + "/" + received.sha256.prefix(2)
        try await fileSystem.createDirectory(at: FilePath(folder), withIntermediateDirectories: true, permissions: Self.folderMode)
        guard rename(received.temporaryPath, path(sha256: received.sha256)) == 0 else {
            await discard(received.temporaryPath)
            throw StoreError.renameFailed(errno)
        }
    }

    /// Removes a file left under `incoming/` (errors ignored: it may already be gone).
    func discard(_ path: String) async {
        _ = try? await fileSystem.removeItem(at: FilePath(path), strategy: .platformDefault, recursively: false)
    }

    /// Where the artifact with this SHA-256 lives (hex, checked by the caller to be 64 hex digits).
    func path(sha256: String) -> String {
        directory + "/" + sha256.prefix(2) + "/" + sha256
    }

    /// The length on disk, or nil when the file is missing (a shared folder not mounted here).
    func length(sha256: String) async throws -> Int64? {
        try await fileSystem.info(forFileAt: FilePath(path(sha256: sha256))).map { Int64($0.size) }
    }

    enum StoreError: Error { case renameFailed(Int32) }
}
