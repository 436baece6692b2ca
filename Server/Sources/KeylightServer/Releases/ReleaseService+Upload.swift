import Foundation
import Crypto
import NIOCore

/// Artifact uploads: `PUT …/releases/{id}/artifacts?platform=&arch=[&signature=][&filename=]`.
extension ReleaseService {
    /// The query of an upload, checked.
    struct ArtifactUpload: Sendable {
        var platform: String
        var arch: String
        /// Sparkle's `sign_update` output, decoded; nil: the server signs.
        var signature: Data?
        var fileName: String?

        init(platform: String?, arch: String?, signature: String?, fileName: String?) throws(APIError) {
            guard let platform, !platform.isEmpty else { throw .invalidRequest("Missing query parameter platform (darwin, windows or linux).") }
            self.platform = try ReleaseService.platform(platform)
            self.arch = try ReleaseService.arch(arch ?? "universal")
            if let signature, !signature.isEmpty {
                guard let bytes = SparkleSignature.decode(signature) else {
                    throw .invalidRequest("signature is the base64 (URL-safe or standard) of a 64-byte EdDSA signature, as Sparkle's sign_update prints it.")
                }
                self.signature = bytes
            }
            if let fileName, !fileName.isEmpty {
                guard fileName.utf8.count <= 128, !fileName.hasPrefix("."),
                      fileName.utf8.allSatisfy({ (0x30...0x39).contains($0) || (0x41...0x5A).contains($0) || (0x61...0x7A).contains($0) || $0 == 0x2E || $0 == 0x2D || $0 == 0x5F }),
                      ArtifactKind.claimed(by: fileName) != nil else {
                    throw .invalidRequest("filename is at most 128 letters, digits, dots, dashes or underscores, ending in the file's extension (.zip, .dmg, .pkg, .tar.gz, .msi, .exe, .AppImage, .deb …).")
                }
                self.fileName = fileName
            }
        }
    }

    static func artifactTooLarge(_ limit: Int64) -> APIError {
        APIError(status: .contentTooLarge, code: "PAYLOAD_TOO_LARGE", message: "The file is over this server's artifact limit of \(limit) bytes (--max-artifact-bytes).")
    }

    /// Streams the body to disk, checks or makes its signature, and records it for the draft.
    /// Nothing is left behind by a failure: the partial file is removed and no row is written.
    func uploadArtifact<Body: AsyncSequence>(
        tenantId: String, productId: String, releaseId: String, _ upload: ArtifactUpload, contentLength: Int64?, body: Body, actor: AuditActor
    ) async throws -> ReleaseArtifact where Body.Element == ByteBuffer {
        guard releaseId.utf8.count <= 64, let release = try await database.release(tenantId: tenantId, productId: productId, id: releaseId) else {
            throw APIError.notFound("Release")
        }
        guard release.state == .draft else {
            throw APIError(status: .conflict, code: "RELEASE_STATE", message: "The release is \(release.state.rawValue): only a draft takes files.")
        }
        let settings = try await updateSettings(tenantId: tenantId, productId: productId)
        let serverKey = try sparklePrivateKey(settings)
        guard upload.signature != nil || serverKey != nil else {
            throw APIError.invalidRequest("This product's Sparkle key is your own (sparkle_public_key): pass the file's signature from sign_update.")
        }
        let limit = configuration.maxArtifactBytes
        if let contentLength, contentLength > limit { throw Self.artifactTooLarge(limit) }
        let received: ArtifactStore.Received
        do {
            received = try await store.receive(body, limit: limit)
        } catch ArtifactStore.ReceiveError.tooLarge {
            throw Self.artifactTooLarge(limit)
        } catch ArtifactStore.ReceiveError.empty {
            throw APIError.invalidRequest("The file is empty.")
        }
        do {
            let artifact = try await check(received, upload, release: release, settings: settings, serverKey: serverKey)
            try await store.commit(received)
            switch try await database.saveArtifact(artifact, tenantId: tenantId, productId: productId, actor: actor) {
            case .saved: break
            case .notFound: throw APIError.notFound("Release")
            case .wrongState(let state):
                throw APIError(status: .conflict, code: "RELEASE_STATE", message: "The release is \(state.rawValue): only a draft takes files.")
            }
            forgetFeed(tenantId: tenantId, productId: productId)
            logger.info("artifact uploaded", metadata: ["release": "\(releaseId)", "platform": "\(artifact.platform)", "arch": "\(artifact.arch)", "length": "\(artifact.length)"])
            return artifact
        } catch {
            await store.discard(received.temporaryPath)
            throw error
        }
    }

    /// What the file is, its name, and its signature (checked against the product's key, or made).
    private func check(
        _ received: ArtifactStore.Received, _ upload: ArtifactUpload, release: Release, settings: ProductUpdateSettings, serverKey: Curve25519.Signing.PrivateKey?
    ) async throws -> ReleaseArtifact {
        let detected = ArtifactKind.detect(head: received.head, tail: received.tail)
        if let name = upload.fileName, let detected, ArtifactKind.claimed(by: name) != detected {
            throw APIError.invalidRequest("The file is a .\(detected.fileExtension), not what its name \(name) says: Sparkle would pick the wrong unarchiver.")
        }
        guard let kind = detected ?? upload.fileName.flatMap(ArtifactKind.claimed(by:)) else {
            throw APIError.invalidRequest("The file's type is not known from its bytes: pass filename with its extension.")
        }
        if upload.platform == "darwin", !kind.isSparkleArchive {
            throw APIError.invalidRequest("A darwin file must be one Sparkle installs: .zip, .dmg, .pkg or .tar.gz/.xz/.bz2 (this is a .\(kind.fileExtension)).")
        }
        let fileName = upload.fileName ?? "\(release.productId)-\(release.shortVersion).\(kind.fileExtension)"
        let signature: String
        let signedBy: String
        if let given = upload.signature {
            guard let publicKey = Data(base64Encoded: settings.sparklePublicKey).flatMap({ try? Curve25519.Signing.PublicKey(rawRepresentation: $0) }),
                  try await SparkleSignature.isValid(given, fileAt: received.temporaryPath, publicKey: publicKey) else {
                throw APIError(status: .badRequest, code: "BAD_SIGNATURE", message: "The signature does not verify for this file under the product's Sparkle public key (sparkle_public_key).")
            }
            signature = given.base64EncodedString()
            signedBy = "developer"
        } else if let serverKey {
            signature = try await SparkleSignature.sign(fileAt: received.temporaryPath, with: serverKey)
            signedBy = "server"
        } else {
            throw APIError.invalidRequest("Pass the file's signature from sign_update.")
        }
        return ReleaseArtifact(
            releaseId: release.id, platform: upload.platform, arch: upload.arch, length: received.length, sha256: received.sha256,
            edSignature: signature, signedBy: signedBy, createdAt: clock.unixSeconds, fileName: fileName
        )
    }
}
