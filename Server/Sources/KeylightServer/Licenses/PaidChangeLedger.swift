import Foundation
import SQLKit

/// Paid changes to a license already sold, inside the transaction that records the payment's
/// event: an upgrade, a renewal or extra seats, bought for the license the checkout named
/// (`keylight_license_id` in the provider's custom data). Once per order, however many
/// deliveries or processes race (the order is claimed first); never a new key, never a mint. A
/// refund sets back what the payment changed, field by field, where nothing else has changed it
/// since.
struct PaidChangeLedger: Sendable {
    let db: any SQLDatabase
    let tenantId: String
    let provider: KeyTypeOffer.Provider
    let now: Int64
    /// The event being applied, named in audit entries.
    let eventId: String
    let outbox: WebhookOutbox?
    let actor: AuditActor
    /// ` FOR UPDATE` where the database locks rows (PostgreSQL).
    var lock: SQLQueryString = ""

    /// The license id a checkout's custom data names, if it is one this server could have made
    /// (custom data is the buyer's browser's to write: anything else names no license).
    static func licenseId(_ text: String?) -> String? {
        guard let text, (1...64).contains(text.utf8.count),
              text.utf8.allSatisfy({ (0x61...0x7A).contains($0) || (0x30...0x39).contains($0) || $0 == 0x2D }) else { return nil }
        return text
    }

    enum Outcome: Sendable, Equatable {
        case applied
        /// The order changed the license already (another delivery of the same payment).
        case alreadyApplied
        /// The order was refunded before its payment arrived: nothing changes.
        case refunded
        /// No license of this tenant has that id, or the price is not offered to its key type.
        case noLicense
        case noOffer
        /// The offer does not apply to this license as it is (a renewal of a license that never ends).
        case refused(String)
    }

    /// Applies the offer `priceRef` buys to `licenseId`, `quantity` times for seats.
    func apply(orderId: String, paymentRef: String?, licenseId: String, priceRef: String, quantity: Int) async throws -> Outcome {
        guard let (offer, productId) = try await Database.offer(db, tenantId: tenantId, provider: provider, priceRef: priceRef) else { return .noOffer }
        let key: SQLQueryString = "tenant_id = \(bind: tenantId) AND provider = \(bind: provider.rawValue) AND order_id = \(bind: orderId)"
        let claimed = try await db.raw("""
            INSERT INTO license_paid_changes (tenant_id, provider, order_id, license_id, kind, quantity, payment_ref, changes, status, created_at, updated_at)
            VALUES (\(bind: tenantId), \(bind: provider.rawValue), \(bind: orderId), \(bind: licenseId), \(bind: offer.kind.rawValue), \(bind: quantity),
                    \(bind: paymentRef), '{}', 'applied', \(bind: now), \(bind: now))
            ON CONFLICT (tenant_id, provider, order_id) DO NOTHING RETURNING order_id
            """).first() != nil
        guard claimed else {
            let status = try await db.raw("SELECT status FROM license_paid_changes WHERE \(key)").first(decodingColumn: "status", as: String.self)
            return status == "refunded" ? .refunded : .alreadyApplied
        }
        let outcome = try await change(offer: offer, productId: productId, orderId: orderId, licenseId: licenseId, quantity: quantity, key: key)
        // Nothing changed: the claim goes, so the same payment delivered again is looked at anew
        // (the license may be there by then), not answered `already_applied`.
        if outcome != .applied { try await db.raw("DELETE FROM license_paid_changes WHERE \(key)").run() }
        return outcome
    }

    private func change(offer: KeyTypeOffer, productId: String, orderId: String, licenseId: String, quantity: Int, key: SQLQueryString) async throws -> Outcome {
        guard let license = try await db.raw("""
            SELECT \(Database.licenseColumns) FROM licenses WHERE id = \(bind: licenseId) AND tenant_id = \(bind: tenantId) AND product_id = \(bind: productId)\(lock)
            """).first(decoding: License.self) else { return .noLicense }
        // An offer buys what its key type sells, for a license still on that key type. The custom
        // data naming the license is the buyer's browser's to write: a cheaper key type's renewal
        // or seat price, or an upgrade to where the license already is (which would restart its
        // updates at upgrade price), changes nothing and is recorded as `no_offer`.
        guard license.keyTypeId == offer.keyTypeId else { return .noOffer }
        let keyTypes = LicenseEdit.KeyTypes(try await db.raw("""
            SELECT \(Database.keyTypeColumns) FROM key_types WHERE tenant_id = \(bind: tenantId) AND product_id = \(bind: productId)
            """).all(decoding: KeyType.self))
        let edit: LicenseEdit
        switch Self.edit(for: offer, license: license, keyTypes: keyTypes, quantity: quantity, now: now) {
        case .success(let built): edit = built
        case .failure(let refusal): return .refused(refusal.code)
        }
        switch try await Database.editLicense(
            db, tenantId: tenantId, productId: productId, id: licenseId, edit: edit, keyTypes: keyTypes, now: now, actor: actor, lock: "", outbox: outbox,
            details: ["order_id": orderId, "event": eventId, "offer": offer.kind.rawValue]
        ) {
        case .edited(let outcome):
            let changes = String(decoding: try JSONEncoder().encode(outcome.changes), as: UTF8.self)
            try await db.raw("UPDATE license_paid_changes SET changes = \(bind: changes), updated_at = \(bind: now) WHERE \(key)").run()
            return .applied
        case .refused(let refusal): return .refused(refusal.code)
        case .notFound, .alreadyApplied: return .noLicense
        }
    }

    /// What an offer does to a license as it is now.
    static func edit(for offer: KeyTypeOffer, license: License, keyTypes: LicenseEdit.KeyTypes, quantity: Int, now: Int64) -> Result<LicenseEdit, LicenseEdit.Refusal> {
        var edit = LicenseEdit()
        switch offer.kind {
        case .upgrade:
            edit.keyTypeId = offer.targetKeyTypeId
            if let target = keyTypes[offer.targetKeyTypeId], target.upgradeRestartsUpdates == true, let days = target.updatesDays {
                edit.updatesUntil = .set(now + Int64(days) * 86_400)
            }
        case .renewal:
            guard let keyType = keyTypes[license.keyTypeId] else { return .failure(.init(code: "UNKNOWN_KEY_TYPE", message: "The license's key type is gone.")) }
            // Each date runs on from where it stands, or from now once it has passed.
            if let days = keyType.durationDays, let current = license.expiresAt { edit.expiresAt = .set(max(current, now) + Int64(days) * 86_400) }
            if let days = keyType.updatesDays, let current = license.updatesUntil { edit.updatesUntil = .set(max(current, now) + Int64(days) * 86_400) }
            guard edit.expiresAt != .keep || edit.updatesUntil != .keep else {
                return .failure(.nothingToRenew(license.expiresAt == nil ? .expiresAt : .updatesUntil))
            }
        case .seats:
            edit.limitAdd = min(max(quantity, 1), 1_000)
        }
        return .success(edit)
    }

    /// Sets back what a refunded payment changed: each field the payment changed that still has
    /// the value it set. An order refunded before its payment arrived is recorded, so the payment
    /// then changes nothing. `orderId` or, for Stripe's refunds, `paymentRef` names it.
    func undo(orderId: String? = nil, paymentRef: String? = nil, reason: String) async throws -> Bool {
        let condition: SQLQueryString
        if let orderId {
            condition = "tenant_id = \(bind: tenantId) AND provider = \(bind: provider.rawValue) AND order_id = \(bind: orderId)"
        } else if let paymentRef {
            condition = "tenant_id = \(bind: tenantId) AND provider = \(bind: provider.rawValue) AND payment_ref = \(bind: paymentRef)"
        } else {
            return false
        }
        let rows = try await db.raw("""
            UPDATE license_paid_changes SET status = 'refunded', updated_at = \(bind: now) WHERE \(condition) AND status = 'applied'
            RETURNING order_id, license_id, changes, kind, quantity
            """).all()
        if rows.isEmpty, let orderId {
            // A refund ahead of its payment: the payment, when it comes, finds the order refunded.
            try await db.raw("""
                INSERT INTO license_paid_changes (tenant_id, provider, order_id, license_id, kind, quantity, payment_ref, changes, status, created_at, updated_at)
                VALUES (\(bind: tenantId), \(bind: provider.rawValue), \(bind: orderId), '', '', 0, NULL, '{}', 'refunded', \(bind: now), \(bind: now))
                ON CONFLICT (tenant_id, provider, order_id) DO NOTHING
                """).run()
        }
        var undone = false
        for row in rows {
            let licenseId = try row.decode(column: "license_id", as: String.self)
            let changes = (try? JSONDecoder().decode([String: [String]].self, from: Data(try row.decode(column: "changes", as: String.self).utf8))) ?? [:]
            guard let license = try await db.raw("""
                SELECT \(Database.licenseColumns) FROM licenses WHERE id = \(bind: licenseId) AND tenant_id = \(bind: tenantId)\(lock)
                """).first(decoding: License.self) else { continue }
            let keyTypes = LicenseEdit.KeyTypes(try await db.raw("""
                SELECT \(Database.keyTypeColumns) FROM key_types WHERE tenant_id = \(bind: tenantId) AND product_id = \(bind: license.productId)
                """).all(decoding: KeyType.self))
            let edit = Self.reverse(
                changes, of: license, kind: try row.decode(column: "kind", as: String.self), quantity: try row.decode(column: "quantity", as: Int.self), keyTypes: keyTypes
            )
            guard !edit.isEmpty else { continue }
            if case .edited = try await Database.editLicense(
                db, tenantId: tenantId, productId: license.productId, id: licenseId, edit: edit, keyTypes: keyTypes, now: now, actor: actor, lock: "",
                outbox: outbox, details: ["order_id": try row.decode(column: "order_id", as: String.self), "event": eventId, "refund": reason]
            ) { undone = true }
        }
        return undone
    }

    /// The edit that sets back `changes` (`{field: [from, to]}`) on `license`: the key type where
    /// it still is the one the change set; seats and renewed periods by their own amount, so a
    /// refund of the first of two purchases takes back only what it bought.
    static func reverse(_ changes: [String: [String]], of license: License, kind: String, quantity: Int, keyTypes: LicenseEdit.KeyTypes) -> LicenseEdit {
        var edit = LicenseEdit()
        func text<T: CustomStringConvertible>(_ value: T?) -> String { value?.description ?? "null" }
        for (field, values) in changes where values.count == 2 {
            let (from, to) = (values[0], values[1])
            switch field {
            case "key_type_id" where license.keyTypeId == to: edit.keyTypeId = from
            case "activation_limit_override" where kind == KeyTypeOffer.Kind.seats.rawValue:
                // Seats bought twice and refunded once: the refund takes back its own seats,
                // whatever was bought after it; back at the key type's limit, the override goes.
                let base = keyTypes[license.keyTypeId]?.activationLimit
                let back = (license.activationLimitOverride ?? base ?? quantity + 1) - quantity
                // The override this purchase made (from none) goes when what is left is the limit it
                // started from, or the key type's.
                let startedFrom = (Int(to) ?? 0) - quantity
                edit.activationLimit = .set(from == "null" && (back == startedFrom || back == base) ? nil : max(back, 1))
            case "activation_limit_override" where text(license.activationLimitOverride) == to:
                edit.activationLimit = .set(Int(from))
            case "expires_at", "updates_until":
                let current = field == "expires_at" ? license.expiresAt : license.updatesUntil
                // A renewal refunded after a later one: its own period comes off the date.
                let back: Int64?? = if let current, let newer = Int64(to), let older = Int64(from) {
                    .some(current - (newer - older))
                } else if text(current) == to {
                    .some(Int64(from))
                } else {
                    nil
                }
                if let back { if field == "expires_at" { edit.expiresAt = .set(back) } else { edit.updatesUntil = .set(back) } }
            default: break
            }
        }
        return edit
    }
}
