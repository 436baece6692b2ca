/// One `Range: bytes=…` request (RFC 9110 §14.1.2) against a file of a known length. Several
/// ranges in one request are answered whole: resuming a download asks for one.
enum ByteRange: Equatable, Sendable {
    case whole
    case part(ClosedRange<Int64>)
    case unsatisfiable

    static func parse(_ header: String?, length: Int64) -> ByteRange {
        guard let header, header.utf8.count <= 200 else { return .whole }
        guard header.hasPrefix("bytes="), !header.contains(",") else { return .whole }
        let spec = header.dropFirst("bytes=".count)
        let bounds = spec.split(separator: "-", maxSplits: 1, omittingEmptySubsequences: false)
        guard bounds.count == 2, bounds.allSatisfy({ $0.utf8.allSatisfy { (0x30...0x39).contains($0) } && $0.utf8.count <= 19 }) else { return .whole }
        switch (Int64(bounds[0]), Int64(bounds[1])) {
        case (let first?, let last?):
            guard first <= last else { return .whole }
            guard first < length else { return .unsatisfiable }
            return .part(first...min(last, length - 1))
        case (let first?, nil):
            guard first < length else { return .unsatisfiable }
            return .part(first...(length - 1))
        case (nil, let suffix?):
            guard suffix > 0 else { return .unsatisfiable }
            return .part(max(0, length - suffix)...(length - 1))
        case (nil, nil):
            return .whole
        }
    }
}
