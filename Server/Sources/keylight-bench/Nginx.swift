import AsyncHTTPClient
import Foundation
import NIOCore
import NIOPosix

/// nginx serving one folder from a minimal configuration of its own (one process, `sendfile`):
/// the reference that the server's download rate is held to.
final class NginxServer: @unchecked Sendable {
    // @unchecked: `process` is only signalled and waited for, and `port` is set once before sharing.
    let process: Process
    let port: Int

    private init(process: Process, port: Int) {
        self.process = process
        self.port = port
    }

    /// The nginx binary: `path` when given, else the first on PATH or in the sbin folders, which
    /// a user's PATH often lacks (Debian installs nginx as /usr/sbin/nginx).
    static func locate(_ path: String?) -> String? {
        if let path { return FileManager.default.isExecutableFile(atPath: path) ? path : nil }
        let folders = (ProcessInfo.processInfo.environment["PATH"] ?? "").split(separator: ":").map(String.init)
            + ["/usr/sbin", "/usr/local/sbin", "/sbin", "/usr/local/nginx/sbin"]
        return folders.map { $0 + "/nginx" }.first { FileManager.default.isExecutableFile(atPath: $0) }
    }

    /// Starts nginx serving `root` on a free loopback port, its configuration, log and pid file
    /// in `directory`; answers once it accepts requests.
    static func start(binary: String, root: String, directory: URL) async throws -> NginxServer {
        try FileManager.default.createDirectory(at: directory, withIntermediateDirectories: true)
        let port = try await freePort()
        let folder = directory.path
        // The temporary paths are nginx's own, here because the compiled-in ones
        // (/var/lib/nginx/…) are created at start and only root may create them.
        let configuration = """
        daemon off;
        master_process off;
        worker_processes 1;
        pid "\(folder)/nginx.pid";
        error_log "\(folder)/error.log";
        events {}
        http {
          access_log off;
          sendfile on;
          client_body_temp_path "\(folder)/body";
          proxy_temp_path "\(folder)/proxy";
          fastcgi_temp_path "\(folder)/fastcgi";
          uwsgi_temp_path "\(folder)/uwsgi";
          scgi_temp_path "\(folder)/scgi";
          server { listen 127.0.0.1:\(port); root "\(root)"; }
        }

        """
        let file = directory.appendingPathComponent("nginx.conf")
        try Data(configuration.utf8).write(to: file)
        let process = Process()
        process.executableURL = URL(fileURLWithPath: binary)
        // `-e`: errors before the configuration is read go to this log too, not to the
        // compiled-in one, which only root may open.
        process.arguments = ["-e", folder + "/error.log", "-c", file.path, "-p", folder + "/"]
        try process.run()
        let server = NginxServer(process: process, port: port)
        for _ in 0..<100 {
            guard process.isRunning else {
                let log = (try? String(contentsOf: directory.appendingPathComponent("error.log"), encoding: .utf8)) ?? ""
                throw BenchError("nginx did not start (exit \(process.terminationStatus)): \(log)")
            }
            if await server.answers() { return server }
            try await Task.sleep(for: .milliseconds(50))
        }
        server.stop()
        throw BenchError("nginx did not answer on port \(port) within 5 s")
    }

    func stop() {
        guard process.isRunning else { return }
        process.terminate()
        process.waitUntilExit()
    }

    /// Whether it answers at all (its root folder's listing is refused: any status will do).
    private func answers() async -> Bool {
        var request = HTTPClientRequest(url: "http://127.0.0.1:\(port)/")
        request.method = .GET
        guard let response = try? await HTTPClient.shared.execute(request, timeout: .seconds(1)) else { return false }
        _ = try? await response.body.collect(upTo: 1 << 20)
        return true
    }

    /// A loopback port nothing listens on: bound, read and closed again.
    private static func freePort() async throws -> Int {
        let channel = try await ServerBootstrap(group: MultiThreadedEventLoopGroup.singleton).bind(host: "127.0.0.1", port: 0).get()
        let port = channel.localAddress?.port ?? 0
        try await channel.close()
        guard port > 0 else { throw BenchError("no free port") }
        return port
    }
}
