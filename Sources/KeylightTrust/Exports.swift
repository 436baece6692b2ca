// The QR encoder moved to a target of its own (the server uses it without the SDK); apps that
// show an invitation's QR code through `import KeylightTrust` keep compiling.
@_exported import KeylightQR
