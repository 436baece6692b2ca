import Dispatch
import Foundation
import Logging
import ServiceLifecycle
import UnixSignals

extension KeylightServer {
    /// Runs the server until one of `signals` arrives, then shuts down gracefully within
    /// `shutdownTimeout`: in-flight requests finish and buffered writes are flushed. Answers true
    /// when everything was written. Past the timeout the remaining services are cancelled; if
    /// even that hangs (a database call that never returns), the process exits with status 1
    /// a few seconds later rather than never.
    public func run(signals: [UnixSignal] = [.sigterm, .sigint], shutdownTimeout: Duration = .seconds(30), logger: Logger) async throws -> Bool {
        var configuration = ServiceGroupConfiguration(
            services: [
                .init(service: application),
                .init(service: ShutdownWatchdog(limit: shutdownTimeout + .seconds(5), unwritten: unwritten, logger: logger), successTerminationBehavior: .ignore),
                // Last, so graceful shutdown tells it first: /readyz answers 503 from the start of the drain.
                .init(service: DrainSignal(readiness: readiness), successTerminationBehavior: .ignore),
            ],
            gracefulShutdownSignals: signals,
            logger: logger
        )
        configuration.maximumGracefulShutdownDuration = shutdownTimeout
        try await ServiceGroup(configuration: configuration).run()
        let lost = unwritten.current
        if !lost.isEmpty {
            logger.error("shut down with buffered writes not written", metadata: [
                "validation_times": .stringConvertible(lost.validationTimes), "usage_days": .stringConvertible(lost.usageDays),
                "keyless_check_ins": .stringConvertible(lost.keylessCheckIns), "device_days": .stringConvertible(lost.deviceDays),
            ])
        }
        return lost.isEmpty
    }
}

/// Ends the process if graceful shutdown has not finished `limit` after it began. Runs on a
/// Dispatch queue, not the cooperative pool, so a pool full of stuck tasks cannot stop it.
struct ShutdownWatchdog: Service {
    let limit: Duration
    let unwritten: UnwrittenData
    let logger: Logger

    func run() async throws {
        try? await gracefulShutdown()
        let (limit, unwritten, logger) = (limit, unwritten, logger)
        let nanoseconds = limit.components.seconds * 1_000_000_000 + limit.components.attoseconds / 1_000_000_000
        DispatchQueue.global().asyncAfter(deadline: .now() + .nanoseconds(Int(nanoseconds))) {
            let lost = unwritten.current
            logger.critical("graceful shutdown did not finish in time; exiting", metadata: [
                "limit_seconds": .stringConvertible(limit.components.seconds),
                "validation_times_unwritten": .stringConvertible(lost.validationTimes),
                "usage_days_unwritten": .stringConvertible(lost.usageDays),
                "keyless_check_ins_unwritten": .stringConvertible(lost.keylessCheckIns),
                "device_days_unwritten": .stringConvertible(lost.deviceDays),
            ])
            exit(1)
        }
    }
}
