/// This SDK's version, sent to the server as `sdk_version` (with `sdk: "swift"`) on activate,
/// validate and the keyless beacon, as the hosted service's clients send theirs. Module-level, so
/// it reads `Keylight.sdkVersion` (a type named `Keylight` would shadow the module's name).
public let sdkVersion = "2.0.0"
