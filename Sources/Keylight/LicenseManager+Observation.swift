import Foundation
import Observation
#if canImport(Combine)
import Combine
#endif

// Observation by hand instead of the `@Observable` macro: the macro needs macOS 14 and iOS 17
// for the whole class, and the SDK supports macOS 13 and iOS 16. Each published property reads
// and writes through these two functions, so SwiftUI's `ObservableObject` observers (every
// system) and Observation's (macOS 14, iOS 17 and later) hear of every change.
extension LicenseManager {
    func access<Member>(_ keyPath: KeyPath<LicenseManager, Member>) {
        if #available(macOS 14, iOS 17, tvOS 17, watchOS 10, *) {
            (observationRegistrar as! ObservationRegistrar).access(self, keyPath: keyPath)
        }
    }

    func withMutation<Member, Result>(_ keyPath: KeyPath<LicenseManager, Member>, _ mutation: () throws -> Result) rethrows -> Result {
        #if canImport(Combine)
        objectWillChange.send()
        #endif
        if #available(macOS 14, iOS 17, tvOS 17, watchOS 10, *) {
            return try (observationRegistrar as! ObservationRegistrar).withMutation(of: self, keyPath: keyPath, mutation)
        }
        return try mutation()
    }

    /// An `ObservationRegistrar` where the system has Observation, else nothing.
    static func makeObservationRegistrar() -> any Sendable {
        if #available(macOS 14, iOS 17, tvOS 17, watchOS 10, *) {
            return ObservationRegistrar()
        }
        return ()
    }
}

/// Observation (`@Bindable`, plain reads in a SwiftUI body) on systems that have it.
@available(macOS 14, iOS 17, tvOS 17, watchOS 10, *)
extension LicenseManager: Observable {}

#if canImport(Combine)
/// SwiftUI code written for `ObservableObject` (`@StateObject`, `@ObservedObject`,
/// `@EnvironmentObject`) works on every supported system.
extension LicenseManager: ObservableObject {}
#endif
