import Foundation
@testable import KeylightCLI
import NIOCore
import Testing

/// `keylight release publish`'s decisions, reached without a server: what it sends, how it reads
/// an app's release date, how it streams and measures the file, and what it shows meanwhile.
@Suite struct ReleaseCommandTests {
    /// What `body` throws, as the one line the command would print; nil when it throws nothing.
    static func failure(_ body: () throws -> Void) -> String? {
        do {
            try body()
            return nil
        } catch {
            return "\(error)"
        }
    }

    static func temporaryFolder() throws -> URL {
        let folder = FileManager.default.temporaryDirectory.appendingPathComponent("keylight-release-\(UUID().uuidString)")
        try FileManager.default.createDirectory(at: folder, withIntermediateDirectories: true)
        return folder
    }

    @Test func signatureFromSignUpdateBecomesURLSafeBase64() throws {
        // 64 bytes whose standard base64 has `+`, `/` and `=` padding, all of which a query garbles.
        let standard = String(repeating: "+/+/", count: 21) + "+w=="
        let urlSafe = String(repeating: "-_-_", count: 21) + "-w"
        #expect(try SparkleSignatureText.urlSafe(standard) == urlSafe)
        #expect(try SparkleSignatureText.urlSafe(" \(standard)\n") == urlSafe)
        #expect(try SparkleSignatureText.urlSafe(urlSafe) == urlSafe)
        #expect(try SparkleSignatureText.urlSafe(#"sparkle:edSignature="\#(standard)" length="1234""#) == urlSafe)
        // 63 bytes, and not base64 at all.
        #expect(Self.failure { _ = try SparkleSignatureText.urlSafe(String(standard.dropFirst(4))) }?.contains("--signature is not an EdDSA signature") == true)
        #expect(Self.failure { _ = try SparkleSignatureText.urlSafe("not base64!") } != nil)
    }

    @Test func queryAndPathEscapeEveryReservedCharacter() {
        #expect(ArtifactQuery.string(platform: "darwin", arch: "universal", signature: nil, fileName: nil) == "platform=darwin&arch=universal")
        #expect(ArtifactQuery.string(platform: "darwin", arch: "arm64", signature: "ab-_", fileName: "App 1.2+b&x=y/é.zip")
            == "platform=darwin&arch=arm64&signature=ab-_&filename=App%201.2%2Bb%26x%3Dy%2F%C3%A9.zip")
        // Unescaped, a standard signature's `+` would reach the server as a space.
        #expect(ArtifactQuery.string(platform: "darwin", arch: "universal", signature: "a+b/c==", fileName: nil)
            == "platform=darwin&arch=universal&signature=a%2Bb%2Fc%3D%3D")
        let routes = ReleaseRoutes(base: "https://licenses.example.com/k", tenant: "acme co", product: "app/1")
        #expect(routes.releases == "https://licenses.example.com/k/admin/v1/tenants/acme%20co/products/app%2F1/releases")
        #expect(routes.artifacts(release: "rel_1", query: "platform=darwin&arch=universal")
            == "https://licenses.example.com/k/admin/v1/tenants/acme%20co/products/app%2F1/releases/rel_1/artifacts?platform=darwin&arch=universal")
        #expect(routes.action("publish", release: "rel_1") == "https://licenses.example.com/k/admin/v1/tenants/acme%20co/products/app%2F1/releases/rel_1/publish")
    }

    @Test func serverURLIsCheckedBeforeAnyRequest() throws {
        #expect(try ReleaseRoutes.base("https://licenses.example.com/") == "https://licenses.example.com")
        #expect(try ReleaseRoutes.base("http://127.0.0.1:8080") == "http://127.0.0.1:8080")
        for bad in ["licenses.example.com", "ftp://licenses.example.com", "https://licenses.example.com/?a=1", ""] {
            #expect(Self.failure { _ = try ReleaseRoutes.base(bad) }?.contains("--server must be an http(s) URL") == true, "\(bad)")
        }
    }

    @Test func downloadNameKeepsToWhatTheServerTakes() {
        #expect(ArtifactFileName.forUpload("Widget-1.2.zip") == "Widget-1.2.zip")
        #expect(ArtifactFileName.forUpload("My App (2).zip") == "My-App-2-.zip")
        #expect(ArtifactFileName.forUpload("Zoë.dmg") == "Zo-.dmg")
        #expect(ArtifactFileName.forUpload(".hidden.tar.gz") == "hidden.tar.gz")
        #expect(ArtifactFileName.forUpload("Widget.app") == nil)
        #expect(ArtifactFileName.forUpload(String(repeating: "a", count: 130) + ".zip") == nil)
    }

    @Test func releaseDateFromADateTextOrUnixSeconds() throws {
        let midnight: Int64 = 1_795_305_600  // 2026-11-22T00:00:00Z
        #expect(try ReleaseDateValue.unixSeconds(Date(timeIntervalSince1970: 1_795_305_600.75), name: "d").seconds == midnight)
        let text = try ReleaseDateValue.unixSeconds("2026-11-22", name: "d")
        #expect(text.seconds == midnight)
        #expect(!text.isNumber)
        #expect(try ReleaseDateValue.unixSeconds("2026-11-22T09:30:00Z", name: "d").seconds == midnight + 34_200)
        let number = try ReleaseDateValue.unixSeconds(1_795_305_600, name: "d")
        #expect(number.seconds == midnight)
        #expect(number.isNumber)
        #expect(try ReleaseDateValue.unixSeconds(NSNumber(value: midnight), name: "d").seconds == midnight)
        #expect(try ReleaseDateValue.unixSeconds(1_795_305_600.5, name: "d").seconds == midnight)
    }

    @Test func releaseDateOfAnotherKindIsAClearError() {
        let name = "KeylightReleaseDate in Widget.app/Contents/Info.plist"
        #expect(Self.failure { _ = try ReleaseDateValue.unixSeconds("next Tuesday", name: name) }
            == "\(name) is \"next Tuesday\", not a date such as 2026-11-22 or 2026-11-22T09:30:00Z")
        #expect(Self.failure { _ = try ReleaseDateValue.unixSeconds(["2026-11-22"], name: name) }
            == "\(name) is neither a date, nor text such as 2026-11-22, nor a number of Unix seconds")
        #expect(Self.failure { _ = try ReleaseDateValue.unixSeconds(Data([1, 2]), name: name) }?.hasPrefix("\(name) is neither a date") == true)
        #expect(Self.failure { _ = try ReleaseDateValue.unixSeconds(1_795_305_600_000, name: name) }?.contains("(milliseconds? it is Unix seconds)") == true)
        #expect(Self.failure { _ = try ReleaseDateValue.unixSeconds(42, name: name) }?.contains("not Unix seconds between 2000 and 2100") == true)
    }

    @Test func infoPlistGivesTheDateAndVersionsFromXMLOrBinary() throws {
        let xml = Data("""
            <?xml version="1.0" encoding="UTF-8"?>
            <!DOCTYPE plist PUBLIC "-//Apple//DTD PLIST 1.0//EN" "http://www.apple.com/DTDs/PropertyList-1.0.dtd">
            <plist version="1.0">
            <dict>
                <key>CFBundleVersion</key><string>1234</string>
                <key>CFBundleShortVersionString</key><string>1.2</string>
                <key>KeylightReleaseDate</key><date>2026-11-22T09:30:00Z</date>
            </dict>
            </plist>
            """.utf8)
        #expect(try AppBundleInfo.parse(xml, source: "Info.plist")
            == AppBundleInfo(releasedAt: 1_795_339_800, version: "1234", shortVersion: "1.2", releaseDateIsNumber: false))
        let binary = try PropertyListSerialization.data(fromPropertyList: ["KeylightReleaseDate": "2026-11-22", "CFBundleVersion": "7"], format: .binary, options: 0)
        #expect(try AppBundleInfo.parse(binary, source: "Info.plist")
            == AppBundleInfo(releasedAt: 1_795_305_600, version: "7", shortVersion: nil, releaseDateIsNumber: false))
        let numeric = try PropertyListSerialization.data(fromPropertyList: ["KeylightReleaseDate": 1_795_305_600], format: .xml, options: 0)
        #expect(try AppBundleInfo.parse(numeric, source: "Info.plist") == AppBundleInfo(releasedAt: 1_795_305_600, releaseDateIsNumber: true))
        let undated = try PropertyListSerialization.data(fromPropertyList: ["CFBundleVersion": "7"], format: .xml, options: 0)
        #expect(Self.failure { _ = try AppBundleInfo.parse(undated, source: "Info.plist") }?.hasPrefix("Info.plist has no KeylightReleaseDate") == true)

        let folder = try Self.temporaryFolder()
        defer { try? FileManager.default.removeItem(at: folder) }
        let app = folder.appendingPathComponent("Widget.app")
        try FileManager.default.createDirectory(at: app.appendingPathComponent("Contents"), withIntermediateDirectories: true)
        try xml.write(to: app.appendingPathComponent("Contents/Info.plist"))
        #expect(try AppBundleInfo.read(app: app.path).releasedAt == 1_795_339_800)
        #expect(Self.failure { _ = try AppBundleInfo.read(app: folder.path) }?.contains("--app is the built .app bundle") == true)
    }

    @Test func optionsBecomeTheDraftAndTheUploadQuery() throws {
        let folder = try Self.temporaryFolder()
        defer { try? FileManager.default.removeItem(at: folder) }
        let zip = folder.appendingPathComponent("Widget 1.2.zip")
        try Data([0x50, 0x4B, 0x03, 0x04, 0x00]).write(to: zip)
        let standard = String(repeating: "+/+/", count: 21) + "+w=="
        let command = try PublishReleaseCommand.parse([
            "--server", "https://licenses.example.com/", "--token", "kl_test", "--tenant", "acme", "--product", "widget",
            "--file", zip.path, "--version", "1234", "--short-version", "1.2", "--channel", "beta", "--released-at", "1795305600",
            "--critical", "--signature", standard, "--draft",
        ])
        let plan = try command.makePlan()
        defer { plan.file.closeDescriptor() }
        #expect(plan.file.length == 5)
        #expect(!plan.publish)
        #expect(plan.releasedAtSource == .option)
        #expect(plan.routes == ReleaseRoutes(base: "https://licenses.example.com", tenant: "acme", product: "widget"))
        #expect(plan.query == "platform=darwin&arch=universal&signature=\(String(repeating: "-_-_", count: 21))-w&filename=Widget-1.2.zip")
        // Absent options are left out, for the server's defaults.
        let encoder = JSONEncoder()
        encoder.outputFormatting = [.sortedKeys]
        #expect(String(decoding: try encoder.encode(plan.create), as: UTF8.self)
            == #"{"channel":"beta","critical":true,"released_at":1795305600,"short_version":"1.2","version":"1234"}"#)

        #expect(throws: (any Error).self) {
            _ = try PublishReleaseCommand.parse([
                "--server", "https://x.example", "--tenant", "a", "--product", "p", "--file", zip.path,
                "--released-at", "1795305600", "--app", "Widget.app",
            ])
        }
        let empty = folder.appendingPathComponent("empty.zip")
        _ = FileManager.default.createFile(atPath: empty.path, contents: Data())
        #expect(Self.failure { _ = try UploadFile.opening(empty.path) } == "\(empty.path) is empty")
        #expect(Self.failure { _ = try UploadFile.opening(folder.appendingPathComponent("missing.zip").path) }?.hasSuffix("no such file") == true)
        #expect(Self.failure { _ = try UploadFile.opening(folder.path) }?.contains("is a folder") == true)
        #expect(Self.failure { _ = try PublishReleaseCommand.adminToken(nil) } == "give --token, or set KEYLIGHT_ADMIN_TOKEN")
        #expect(Self.failure { _ = try PublishReleaseCommand.adminToken("secret\r\nX-Evil: 1") }?.contains("secret") == false)
    }

    @Test func fileStreamsInChunksHashedOnTheWay() async throws {
        let folder = try Self.temporaryFolder()
        defer { try? FileManager.default.removeItem(at: folder) }
        let path = folder.appendingPathComponent("Widget.zip").path
        try Data((0..<600 * 1_024).map { UInt8($0 % 251) }).write(to: URL(fileURLWithPath: path))
        let file = try UploadFile.opening(path)
        defer { file.closeDescriptor() }
        let meter = UploadMeter(total: file.length, drawsProgress: false)
        var sizes: [Int] = []
        for try await chunk in FileUploadChunks(descriptor: file.descriptor, length: file.length, meter: meter) {
            sizes.append(chunk.readableBytes)
        }
        #expect(sizes == [262_144, 262_144, 90_112])
        #expect(meter.sha256 == "7db7de02805282d3332a52410cd586f9a7be3bf46702b8be91b8779b8593a477")
    }

    @Test func progressLineShowsPercentMegabytesAndSpeed() {
        #expect(UploadProgress.line(sent: 5_000_000, total: 10_000_000, elapsed: .seconds(2)) == "[############------------]  50%  5.0 / 10.0 MB  2.5 MB/s")
        #expect(UploadProgress.line(sent: 0, total: 10_000_000, elapsed: .zero) == "[------------------------]   0%  0.0 / 10.0 MB  0.0 MB/s")
        #expect(UploadProgress.line(sent: 123_456_789, total: 123_456_789, elapsed: .milliseconds(12_500))
            == "[########################] 100%  123.5 / 123.5 MB  9.9 MB/s")
        // 99.9% is not 100% yet.
        #expect(UploadProgress.line(sent: 999, total: 1_000, elapsed: .seconds(1)).hasPrefix("[#######################-]  99%"))
    }

    @Test func progressRedrawsAtMostTenTimesASecond() {
        var throttle = RedrawThrottle()
        let start = ContinuousClock.now
        let draws = [0, 50, 100, 199, 250].map { throttle.shouldDraw(at: start + .milliseconds($0)) }
        #expect(draws == [true, false, true, false, true])
    }

    @Test func serverErrorsReadAsErrorCodeAndStatus() {
        let conflict = AdminAPIFailure(status: 409, body: Data(#"{"error":"Version 1234 already exists in the stable channel.","code":"CONFLICT"}"#.utf8))
        #expect(conflict.description == "Version 1234 already exists in the stable channel. (CONFLICT, HTTP 409)")
        #expect(AdminAPIFailure(status: 502, body: Data("<html>\nBad gateway</html>".utf8)).description == "<html> Bad gateway</html> (HTTP 502)")
        #expect(APIAnswer(status: 409, body: Data(#"{"code":"IDEMPOTENCY_IN_PROGRESS","error":"Still running."}"#.utf8)).isWorthRetrying)
        #expect(!APIAnswer(status: 409, body: Data(#"{"code":"CONFLICT","error":"Taken."}"#.utf8)).isWorthRetrying)
        #expect(APIAnswer(status: 503, body: Data()).isWorthRetrying)
    }

    @Test func releasedAtNoteSaysWhereItCameFromAndWhy() {
        let note = ReleasedAtNote.text(seconds: 1_795_305_600, source: .app("Widget.app"))
        #expect(note.contains("released_at 1795305600 (2026-11-22T00:00:00Z), the KeylightReleaseDate of Widget.app"))
        #expect(note.contains("it must equal the app's KeylightReleaseDate"))
        #expect(ReleasedAtNote.text(seconds: 1_795_305_600, source: .server).contains("the server's clock"))
    }
}
