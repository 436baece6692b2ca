import SQLKit

extension LicenseGrant {
    /// Reads a row of ``Database/grantQuery(keyHash:tenantId:productId:instanceId:lock:)`` column
    /// by column. Through `Decodable` the same row went through sql-kit's keyed decoder (a
    /// container, a coding path and a key per field: about 4 µs of a validate); the columns and
    /// their conversions are the same (`CodingKeys` names them).
    init(row: any SQLRow) throws {
        func value<T: Decodable>(_ key: CodingKeys, as type: T.Type) throws -> T {
            try row.decode(column: key.rawValue, as: T.self)
        }
        // NULL (a license without an expiry, no such instance) as nil, as decodeIfPresent reads it.
        func optional<T: Decodable>(_ key: CodingKeys, as type: T.Type) throws -> T? {
            try row.decodeNil(column: key.rawValue) ? nil : row.decode(column: key.rawValue, as: T.self)
        }
        licenseId = try value(.licenseId, as: String.self)
        status = try value(.status, as: LicenseStatus.self)
        expiresAt = try optional(.expiresAt, as: Int64.self)
        keyHash = try value(.keyHash, as: String.self)
        activationLimit = try value(.activationLimit, as: Int.self)
        fallbackAccess = try value(.fallbackAccess, as: Bool.self)
        leaseTtlSeconds = try value(.leaseTtlSeconds, as: Int64.self)
        entitlements = try value(.entitlements, as: String.self)
        offlineLeaseDays = try value(.offlineLeaseDays, as: Int.self)
        instanceId = try optional(.instanceId, as: String.self)
        instanceActive = try optional(.instanceActive, as: Bool.self)
        instanceMachineHash = try optional(.instanceMachineHash, as: String.self)
        instanceDeviceKey = try optional(.instanceDeviceKey, as: String.self)
        floating = try value(.floating, as: Bool.self)
        heartbeatSeconds = try value(.heartbeatSeconds, as: Int.self)
        overagePercent = try value(.overagePercent, as: Int.self)
        activeInstances = try value(.activeInstances, as: Int.self)
        updatesUntil = try optional(.updatesUntil, as: Int64.self)
        customerEmail = try optional(.customerEmail, as: String.self)
        keyTypeName = try value(.keyTypeName, as: String.self)
        entitlementsAdded = try optional(.entitlementsAdded, as: String.self)
        startsOnActivationFlag = try optional(.startsOnActivationFlag, as: Bool.self)
        durationDays = try optional(.durationDays, as: Int.self)
        updatesDays = try optional(.updatesDays, as: Int.self)
    }
}

extension SQLRawBuilder {
    /// The first row as a ``LicenseGrant``, or nil when there is none.
    func firstGrant() async throws -> LicenseGrant? {
        try await first().map(LicenseGrant.init(row:))
    }
}
