/// Why an offline activation file (request, response or deactivation proof) was refused. The
/// description names what is wrong in words a customer pasting a file can act on.
public struct OfflineFileError: Error, Hashable, Sendable, CustomStringConvertible {
    public let description: String

    public init(_ description: String) {
        self.description = description
    }

    static func tooLarge(_ limit: Int) -> Self { Self("The file is larger than \(limit / 1024) KiB.") }
    static func missingBegin(_ label: String) -> Self { Self("No \"-----BEGIN \(label)-----\" line was found.") }
    static func wrongKind(found: String, expected: String) -> Self {
        Self("This is a \(found.lowercased()) file, not a \(expected.lowercased()) file.")
    }
    static func missingEnd(_ label: String) -> Self { Self("No \"-----END \(label)-----\" line follows the BEGIN line.") }
    static let notBase64 = Self("The text between the BEGIN and END lines is not base64.")
    static let notJSON = Self("The file's content is not a JSON object of the expected fields.")
    static func unsupportedVersion(_ version: Int) -> Self { Self("Version \(version) of this file is not supported (expected 1).") }
    static func badField(_ name: String, _ why: String) -> Self { Self("Field \(name) \(why).") }
}
