import Foundation
@testable import KeylightServer
import NIOPosix
import Testing

/// The server's tasks run on NIO's event loops through a task executor preference, which works
/// in a static binary too (NIO's takeover of the global executor did not).
@Suite(.timeLimit(.minutes(1))) struct EventLoopExecutorTests {
    @Test func theBodyAndItsChildTasksRunOnTheEventLoops() async throws {
        let names = await EventLoopExecutor.singleton.run {
            var names = [loopThreadName()]
            await withTaskGroup(of: String.self) { group in
                for _ in 0..<20 { group.addTask { loopThreadName() } }
                for await name in group { names.append(name) }
            }
            return names
        }
        // NIO names the singleton group's threads NIO-SGLTN-<group>-#<n>.
        #expect(names.count == 21)
        #expect(names.allSatisfy { $0.hasPrefix("NIO-SGLTN") }, "\(Set(names))")
        // Without the preference the same code runs on Swift's own pool.
        #expect(!loopThreadName().hasPrefix("NIO-SGLTN"))
    }
}

/// The running thread's name, read from a synchronous call (async code may move at any suspension).
private func loopThreadName() -> String { Thread.current.name ?? "" }
