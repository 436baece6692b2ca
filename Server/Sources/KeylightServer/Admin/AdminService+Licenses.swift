import Foundation
import KeylightCore

/// Licenses (protocol section 4): minting, reading, status, reminting, resending the key, freeing seats.
extension AdminService {
    /// Mints a license; the raw key is returned here only.
    func createLicense(tenantId: String, productId: String, _ body: CreateLicenseRequest, actor: AuditActor) async throws -> (License, key: LicenseKey) {
        let product = try await requireProduct(tenantId: tenantId, productId: productId)
        let keyTypeId = try Field.pathId(body.key_type_id, "key_type_id")
        guard let keyType = try await database.keyType(tenantId: tenantId, productId: productId, id: keyTypeId) else {
            throw APIError.notFound("Key type")
        }
        let email = try Field.email(body.customer_email)
        let now = clock.unixSeconds
        // Dates given explicitly (an import, a reseller's own terms) date the license now; else
        // the key type's terms do, from now or from its first activation.
        let datedByCaller = body.expires_at != nil || body.updates_until != nil
        let terms = keyType.mintDates(now: now)
        let expiresAt = body.expires_at ?? (datedByCaller ? keyType.durationDays.map { now + Int64($0) * 86_400 } : terms.expiresAt)
        if let expiresAt, expiresAt < 0 || expiresAt > Field.latestDate { throw APIError.invalidRequest("Field expires_at is out of range.") }
        // An imported license keeps the updates its customer bought elsewhere; a new one gets its key type's.
        let updatesUntil = body.updates_until ?? (datedByCaller ? keyType.updatesDays.map { now + Int64($0) * 86_400 } : terms.updatesUntil)
        if let updatesUntil, updatesUntil < 0 || updatesUntil > Field.latestDate { throw APIError.invalidRequest("Field updates_until is out of range.") }
        let key: LicenseKey
        if let imported = body.license_key {
            // A key from the hosted service (protocol 6.1), kept as it is so shipped apps keep working.
            let text = try Field.required(imported, "license_key", max: LicenseKey.importedLengths.upperBound)
            guard LicenseKey.isImportable(text, prefix: product.keyPrefix), let parsed = try? LicenseKey(text) else {
                throw APIError.invalidRequest("Field license_key must be 8-64 characters of A-Z 0-9 - starting with the product prefix \(product.keyPrefix).")
            }
            key = parsed
        } else {
            key = try LicenseKey.generate(prefix: product.keyPrefix)
        }
        var mail: MailRequest?
        if body.send_email == true {
            guard mailBuyers else { throw APIError.mailNotConfigured }
            guard let email else { throw APIError.invalidRequest("Field send_email needs customer_email.") }
            mail = MailRequest(kind: .license, to: email)
        }
        var license = License(
            id: UUID().uuidString.lowercased(), tenantId: tenantId, productId: productId, keyTypeId: keyTypeId,
            keyHash: key.keyHash, maskedKey: key.masked(keepingPrefix: product.keyPrefix), status: .active, expiresAt: expiresAt, customerEmail: email,
            activeInstances: 0, createdAt: now, updatedAt: now, updatesUntil: updatesUntil
        )
        if !datedByCaller { license.waitForFirstActivation(keyType, subscription: false) }
        do {
            try await database.insertLicense(license, key: key.text, sealedKey: try LicenseKeySeal.seal(key, licenseId: license.id, with: sealer), mail: mail, actor: actor)
        } catch where StorageError.isUniqueViolation(error) {
            throw APIError.conflict("That license key is already in use.")
        }
        return (license, key)
    }

    func license(tenantId: String, productId: String, id: String) async throws -> License {
        guard let license = try await database.license(tenantId: tenantId, productId: productId, id: id) else { throw APIError.notFound("License") }
        return license
    }

    func licensePage(tenantId: String, productId: String, _ query: LicenseQuery) async throws -> ([License], next: String?) {
        _ = try await requireProduct(tenantId: tenantId, productId: productId)
        let rows = try await database.licenses(
            tenantId: tenantId, productId: productId, email: query.email, status: query.status, keySuffix: query.keySuffix,
            keyTypeId: query.keyTypeId, metadata: query.metadata, afterId: query.afterId, limit: query.limit + 1
        )
        let page = Array(rows.prefix(query.limit))
        let next = rows.count > query.limit ? page.last.map { LicenseQuery.cursor(after: $0.id) } : nil
        return (page, next)
    }

    func setStatus(tenantId: String, productId: String, id: String, to status: LicenseStatus, action: String, actor: AuditActor) async throws -> License {
        guard let license = try await database.setLicenseStatus(tenantId: tenantId, productId: productId, id: id, status: status, action: action, now: clock.unixSeconds, actor: actor) else {
            throw APIError.notFound("License")
        }
        return license
    }

    /// A new key for the same license; the old key stops working at once.
    func remint(tenantId: String, productId: String, id: String, actor: AuditActor) async throws -> (License, key: LicenseKey) {
        let product = try await requireProduct(tenantId: tenantId, productId: productId)
        let key = try LicenseKey.generate(prefix: product.keyPrefix)
        // The new key is sealed too: a resend after a remint mails the key that works.
        let sealed = try LicenseKeySeal.seal(key, licenseId: id, with: sealer)
        guard let license = try await database.remintLicense(tenantId: tenantId, productId: productId, id: id, keyHash: key.keyHash, maskedKey: key.masked, sealedKey: sealed, now: clock.unixSeconds, actor: actor) else {
            throw APIError.notFound("License")
        }
        return (license, key)
    }

    /// Queues the license's key mail again, to `customer_email` when given (it replaces the
    /// license's address, audited) or to the address on file. A license minted before keys were
    /// kept sealed cannot be mailed (409 `KEY_NOT_RECOVERABLE`: remint it).
    /// Mails a license's key again. To the address on file needs `licenses:mail`; to another
    /// address (which becomes the one on file) also `licenses:write`, so support cannot send a
    /// key wherever it likes.
    func resendEmail(tenantId: String, productId: String, id: String, _ body: ResendEmailRequest, by principal: Principal) async throws -> (License, to: String) {
        let actor = principal.actor
        var license = try await license(tenantId: tenantId, productId: productId, id: id)
        let corrected = try Field.email(body.customer_email)
        if let corrected, corrected != license.customerEmail {
            try authorize(principal, .licensesWrite, tenantId: tenantId, productId: productId)
        }
        guard mailBuyers else { throw APIError.mailNotConfigured }
        guard let to = corrected ?? license.customerEmail else { throw APIError.invalidRequest("The license has no customer_email: give one.") }
        // An address on file came from a payment provider: it may not be one mail can go to.
        guard (try? MailAddress(to)) != nil else { throw APIError.invalidRequest("The license's address (\(to.prefix(80).debugDescription)) cannot receive mail: give customer_email.") }
        guard try await database.sealedKey(licenseId: license.id) != nil else {
            throw APIError(status: .conflict, code: "KEY_NOT_RECOVERABLE", message: "This license was minted before keys were kept sealed, so its key cannot be mailed again; remint it to mail a new key.")
        }
        let now = clock.unixSeconds
        if let corrected, corrected != license.customerEmail {
            license = try await database.setCustomerEmail(licenseId: license.id, tenantId: tenantId, to: corrected, now: now, actor: actor) ?? license
        }
        try await database.enqueueLicenseMail(tenantId: tenantId, licenseId: license.id, to: to, now: now, actor: actor)
        return (license, to)
    }

    func deactivateInstance(tenantId: String, productId: String, licenseId: String, instanceId: String, actor: AuditActor) async throws {
        switch try await licensing.freeSeat(licenseId: licenseId, tenantId: tenantId, productId: productId, instanceId: instanceId, change: InstanceChange(actor: actor, how: .admin)) {
        case .licenseNotFound: throw APIError.notFound("License")
        case .instanceNotFound: throw APIError.notFound("Instance")
        case .deactivated, .alreadyInactive: return
        case .invalidProof: throw APIError.internalError  // no proof was asked for
        }
    }
}
