import ArgumentParser
import AsyncHTTPClient
import Foundation
#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif

/// The calls of `release publish`, in order: create the draft, upload its file, publish it.
struct ReleasePublisher {
    let plan: PublishPlan

    /// Prints the outcome; any failure is one `keylight: error:` line and exit status 1, with a
    /// word on the draft when one was made (its version is taken in its channel from then on).
    func run() async throws {
        do {
            try await HTTPClient.withHTTPClient(configuration: AdminAPI.configuration) { http in
                try await publish(using: AdminAPI(http: http, token: plan.token))
            }
        } catch let exit as ExitCode {
            throw exit
        } catch {
            Standard.error("keylight: error: \(error)")
            throw ExitCode(1)
        }
    }

    private func publish(using api: AdminAPI) async throws {
        let created = try await api.send(
            .POST, plan.routes.releases, json: try JSONEncoder().encode(plan.create),
            idempotencyKey: UUID().uuidString, what: "creating the release"
        ).expecting(201)
        let draft = try created.decode(ReleaseAnswer.self, what: "the new release")
        Standard.error("keylight: created draft \(draft.id): version \(draft.version) (\(draft.short_version)) in channel \(draft.channel)")
        if plan.releasedAtSource == .server {
            Standard.error(ReleasedAtNote.text(seconds: draft.released_at, source: .server))
        }
        do {
            let (artifactAnswer, artifact) = try await upload(to: draft.id, using: api)
            let release: ReleaseAnswer
            let json: Data
            if plan.publish {
                let published = try await api.send(
                    .POST, plan.routes.action("publish", release: draft.id), json: nil,
                    idempotencyKey: UUID().uuidString, what: "publishing the release"
                ).expecting(200)
                release = try published.decode(ReleaseAnswer.self, what: "the published release")
                guard release.state == "published" else { throw ReleaseFailure("the server answered the publish with state \(release.state)") }
                json = published.body
            } else {
                release = draft
                json = try Self.withArtifact(created.body, artifactAnswer.body)
            }
            if plan.json {
                Standard.output(json)
            } else {
                for line in [
                    "id: \(release.id)", "version: \(release.version)", "short_version: \(release.short_version)", "channel: \(release.channel)",
                    "released_at: \(release.released_at)", "file_name: \(artifact.file_name)", "length: \(artifact.length)",
                    "sha256: \(artifact.sha256)", "signed_by: \(artifact.signed_by)", "state: \(release.state)",
                ] { Standard.line(line) }
            }
        } catch {
            Standard.error("keylight: error: \(error)")
            Standard.error("keylight: release \(draft.id) stays a draft on the server (version \(draft.version) in channel \(draft.channel)); "
                + "finish it with POST \(plan.routes.action("publish", release: draft.id)) once it has its file, or withdraw it with …/yank.")
            throw ExitCode(1)
        }
    }

    /// Streams the file, then checks the server kept exactly the bytes sent: the same length and
    /// the SHA-256 measured on the way out.
    private func upload(to releaseId: String, using api: AdminAPI) async throws -> (APIAnswer, ArtifactAnswer) {
        let file = plan.file
        let meter = UploadMeter(total: file.length, drawsProgress: isatty(STDERR_FILENO) != 0)
        var request = HTTPClientRequest(url: plan.routes.artifacts(release: releaseId, query: plan.query))
        request.method = .PUT
        api.authorize(&request)
        request.headers.add(name: "Content-Type", value: "application/octet-stream")
        // `.known` makes AsyncHTTPClient send Content-Length: the server refuses an oversized file before reading it.
        request.body = .stream(FileUploadChunks(descriptor: file.descriptor, length: file.length, meter: meter), length: .known(file.length))
        Standard.error("keylight: uploading \(file.path) (\(UploadProgress.megabytes(file.length)) MB)")
        let sent = request
        let answer: APIAnswer
        do {
            defer { meter.endLine() }
            answer = try await withThrowingTaskGroup(of: APIAnswer?.self, returning: APIAnswer.self) { group in
                // No deadline for the whole upload (a large file on a slow line takes what it takes);
                // the watchdog ends it when nothing moves, the read timeout once the file is sent.
                group.addTask { try await api.exchange(sent, deadline: .distantFuture) }
                group.addTask {
                    try await meter.watchForStall(limit: .seconds(UploadMeter.stallSeconds))
                    return nil
                }
                while let result = try await group.next() {
                    if let result {
                        group.cancelAll()
                        return result
                    }
                }
                throw ReleaseFailure("the upload ended without an answer")
            }
        } catch let failure as ReleaseFailure {
            throw failure
        } catch {
            throw ReleaseFailure("uploading the file: \(error)")
        }
        let artifactAnswer = try answer.expecting(201)
        let artifact = try artifactAnswer.decode(ArtifactAnswer.self, what: "the upload")
        guard let digest = meter.sha256 else { throw ReleaseFailure("the upload ended before the whole file was read") }
        guard artifact.length == file.length, artifact.sha256.lowercased() == digest else {
            throw ReleaseFailure("the server kept \(artifact.length) bytes with SHA-256 \(artifact.sha256), but \(file.path) is \(file.length) bytes with SHA-256 \(digest); not publishing")
        }
        Standard.error("keylight: uploaded \(artifact.file_name): \(artifact.length) bytes, SHA-256 \(digest) checked, signed by the \(artifact.signed_by)")
        return (artifactAnswer, artifact)
    }

    /// A draft's JSON with its artifact, for `--json --draft`: the release as publishing would
    /// have shown it, without a GET (which needs products:read, a token for CI may lack it).
    static func withArtifact(_ release: Data, _ artifact: Data) throws -> Data {
        guard var object = try JSONSerialization.jsonObject(with: release) as? [String: Any],
              let artifactObject = try JSONSerialization.jsonObject(with: artifact) as? [String: Any] else {
            throw ReleaseFailure("the server's answer is not a JSON object")
        }
        object["artifacts"] = [artifactObject]
        return try JSONSerialization.data(withJSONObject: object, options: [.sortedKeys, .withoutEscapingSlashes])
    }
}
