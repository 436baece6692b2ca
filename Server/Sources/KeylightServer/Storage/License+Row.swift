import SQLKit

extension License {
    /// Reads a row of ``Database/licenseColumns`` column by column, as ``LicenseGrant`` reads its
    /// own: through `Decodable` an activation's license went through sql-kit's keyed decoder (a
    /// container, a coding path and a key per field: about 56,000 instructions an activation). The
    /// columns and conversions are the same (`CodingKeys` names them); an optional column that is
    /// NULL or absent is nil, as the synthesised `decodeIfPresent` reads it.
    init(row: any SQLRow) throws {
        func value<T: Decodable>(_ key: CodingKeys, as type: T.Type) throws -> T {
            try row.decode(column: key.rawValue, as: T.self)
        }
        func optional<T: Decodable>(_ key: CodingKeys, as type: T.Type) throws -> T? {
            guard row.contains(column: key.rawValue), try !row.decodeNil(column: key.rawValue) else { return nil }
            return try row.decode(column: key.rawValue, as: T.self)
        }
        self.init(
            id: try value(.id, as: String.self), tenantId: try value(.tenantId, as: String.self),
            productId: try value(.productId, as: String.self), keyTypeId: try value(.keyTypeId, as: String.self),
            keyHash: try value(.keyHash, as: String.self), maskedKey: try value(.maskedKey, as: String.self),
            status: try value(.status, as: LicenseStatus.self), expiresAt: try optional(.expiresAt, as: Int64.self),
            customerEmail: try optional(.customerEmail, as: String.self), activeInstances: try value(.activeInstances, as: Int.self),
            createdAt: try value(.createdAt, as: Int64.self), updatedAt: try value(.updatedAt, as: Int64.self),
            updatesUntil: try optional(.updatesUntil, as: Int64.self)
        )
        paymentSource = try optional(.paymentSource, as: String.self)
        paymentOrderId = try optional(.paymentOrderId, as: String.self)
        activationLimitOverride = try optional(.activationLimitOverride, as: Int.self)
        entitlementsAdded = try optional(.entitlementsAdded, as: String.self)
        note = try optional(.note, as: String.self)
        startsOnActivationFlag = try optional(.startsOnActivationFlag, as: Bool.self)
    }
}

extension SQLRawBuilder {
    /// The first row as a ``License``, or nil when there is none.
    func firstLicense() async throws -> License? {
        try await first().map(License.init(row:))
    }
}
