import Foundation
import KeylightTestSupport
@testable import KeylightServer
import Testing

/// The hand reader of SDK bodies answers exactly what `JSONDecoder` answers, or declines.
@Suite struct FlatJSONObjectTests {
    static let samples = [
        #"{"license_key":"ACME-2F4K-9QXZ-7MWP-H3TD","instance_id":"3f1c2a9e-7b3d-4a51-9e0f-1d2c3b4a5f60","machine_hash":"b1946ac92492d2347c6235b4d2611184"}"#,
        #"{ "license_key" : "ACME-2F4K" , "machine_hash": null, "app_version": "2.4.1", "sdk": "swift", "os_version": "15.1", "arch": "arm64", "cpu_cores": "8", "memory": "16" }"#,
        "{\n  \"license_key\": \"K\",\n  \"instance_name\": \"Mac mini\",\n  \"platform\": \"macOS\",\n  \"unknown\": \"kept out\"\n}\n",
        #"{}"#,
    ]

    /// What each reading gave, in one comparable value.
    static func reading<Fields>(_ body: SDKBody<Fields>, _ fields: (Fields) -> [String?]) -> [String?] {
        let t = body.telemetry
        return fields(body.fields) + [t.appVersion, t.sdkVersion, t.sdk, t.platform, t.osVersion, t.arch, t.cpuCores, t.memory]
    }

    static func validateFields(_ request: ValidateRequest) -> [String?] { [request.license_key, request.instance_id, request.machine_hash] }
    static func activateFields(_ request: ActivateRequest) -> [String?] {
        [request.license_key, request.instance_name, request.machine_hash, request.free_tier_instance_id, request.instance_id]
    }

    /// Nil when the hand reader declined; else whether both readings agree.
    static func agree(_ bytes: [UInt8]) -> Bool? {
        guard let object = FlatJSONObject(bytes) else { return nil }
        guard let decoded = try? JSONDecoder().decode(SDKBody<ValidateRequest>.self, from: Data(bytes)),
              let activation = try? JSONDecoder().decode(SDKBody<ActivateRequest>.self, from: Data(bytes)) else { return false }
        return reading(SDKBody<ValidateRequest>(flat: object), validateFields) == reading(decoded, validateFields)
            && reading(SDKBody<ActivateRequest>(flat: object), activateFields) == reading(activation, activateFields)
    }

    @Test func theBodiesClientsSendAreReadByHandAsJSONDecoderReadsThem() throws {
        for sample in Self.samples {
            #expect(Self.agree(Array(sample.utf8)) == true, "\(sample)")
        }
        let object = try #require(FlatJSONObject(Array(Self.samples[1].utf8)))
        #expect(object.text("license_key") == "ACME-2F4K" && object["machine_hash"] == .some(nil) && object["instance_id"] == nil)
        // Through the route's overload too.
        let body = try decodeBody(SDKBody<ValidateRequest>.self, from: Data(Self.samples[1].utf8))
        #expect(body.fields.license_key == "ACME-2F4K" && body.telemetry.arch == "arm64" && body.telemetry.cpuCores == "8")
    }

    @Test func anythingElseIsLeftToJSONDecoder() {
        let declined = [
            #"{"license_key":"A\"B"}"#, #"{"license_key":"\u0041"}"#, #"{"license_key":"é"}"#, #"{"cpu_cores":8}"#,
            #"{"license_key":true}"#, #"{"a":{"b":"c"}}"#, #"{"a":["b"]}"#, #"{"license_key":"A","license_key":"B"}"#,
            #"{"license_key":"A"} x"#, #"{"license_key":"A""#, #"{"license_key":"A",}"#, "", "[]", "\u{FEFF}{}", #"{"a" "b"}"#,
            #"{"license_key":nul}"#, "{\"license_key\":\"A\u{1}\"}", #"{"a":"b"}{"c":"d"}"#, "null", #""a""#,
        ]
        for body in declined {
            #expect(FlatJSONObject(Array(body.utf8)) == nil, "\(body)")
        }
        // Bytes that are not UTF-8.
        #expect(FlatJSONObject([0x7B, 0x22, 0x61, 0x22, 0x3A, 0x22, 0xC3, 0x28, 0x22, 0x7D]) == nil)
    }

    /// Kept short, and yielding, because it runs beside every other suite on the two threads of
    /// Swift's pool and needs no more bodies to cover the reader's branches. (It was once blamed
    /// for a stalled body left open for 40 s in another suite; the cause was a socket a child
    /// process had inherited, fixed in `CrashTests.shell`.)
    @Test func mutatedBodiesAreReadAlikeOrDeclined() async {
        var mutator = Mutator(seed: Mutator.seed("flat JSON bodies"))
        var (read, declined) = (0, 0)
        for index in 0..<4_000 {
            if index % 50 == 0 { await Task.yield() }
            let body = mutator.mutate(text: mutator.pick(Self.samples))
            switch Self.agree(Array(body.utf8)) {
            case nil: declined += 1
            case true?: read += 1
            case false?: Issue.record("read differently from JSONDecoder: \(body)")
            }
        }
        // Both ways were taken: the comparison above ran.
        #expect(read > 100 && declined > 100, "\(read) read by hand, \(declined) declined")
        print("flat JSON bodies: \(read) read by hand, \(declined) declined")
    }
}
