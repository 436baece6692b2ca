/// What processes of the previous release can do beside a migration: the rule a rolling upgrade
/// rests on. Migrations are written expand-then-contract: a column is added before any release
/// uses it, and dropped a release after the last one that reads it.
enum MigrationSafety: Sendable, Equatable {
    /// Adds only (tables, nullable or defaulted columns, indexes): processes of the previous
    /// release keep serving on the migrated database. `caveat` says what they do not know about
    /// until they are replaced, or is nil when nothing they serve changes.
    case expand(caveat: String?)
    /// Drops, renames or tightens what the previous release reads or writes: every process must
    /// run a release that no longer uses it before this migration runs.
    case contract(reason: String)

    /// True when processes of the previous release keep working while and after it runs.
    var isSafeBesideOlderProcesses: Bool {
        if case .expand = self { return true }
        return false
    }
}

extension Migration {
    /// Each migration's safety, by name. A test applies every migration marked `.expand` to a
    /// database and checks it only added (no table, column or nullability lost), so this list
    /// cannot claim what the schema does not do.
    static let safety: [String: MigrationSafety] = {
        let mailKinds = "processes of 63ae57f cannot read the new mail kinds: while such a mail is due they send none (they roll the claim back and log it at debug level); this release's processes send it"
        var table: [String: MigrationSafety] = [:]
        for name in ["0001_initial_schema", "0002_response_signing_keys", "0003_stripe", "0004_webhooks_and_checkout", "0005_dashboard",
                     "0006_tenant_signing_keys", "0007_replaced_license_keys", "0009_seats_offline", "0010_floating_updates",
                     "0011_mail", "0012_idempotency", "0013_sdk_key_optional", "0014_merchants", "0015_appstore", "0016_insights"] {
            table[name] = .expand(caveat: nil)  // all in release 63ae57f (SDK 1.1.0)
        }
        // Rebuilt stripe_events keyed by tenant, with NOT NULL columns the release before it never wrote.
        table["0008_money_paths"] = .contract(reason: "rebuilds stripe_events, keyed by tenant, with NOT NULL columns that releases before it do not write")
        table["0017_license_life"] = .expand(caveat: "processes of 63ae57f ignore license edits (activation limit overrides, added entitlements, a start on first activation): make such edits once every process runs this release")
        table["0018_paid_changes"] = .expand(caveat: "upgrades and renewals are sold and applied by this release's processes only")
        table["0019_reminders"] = .expand(caveat: "reminder mail: \(mailKinds)")
        table["0020_portal_accounts"] = .expand(caveat: "sign-in links to the account page: \(mailKinds)")
        table["0021_reminder_templates"] = .expand(caveat: nil)
        table["0022_team_access"] = .expand(caveat: "processes of 63ae57f know no roles, tokens or second factor: they give every dashboard user full access and sign in with the password alone, and refuse scoped klt_ tokens (401). Invite users, turn on two-factor sign-in and hand out scoped tokens once every process runs this release")
        table["0023_releases"] = .expand(caveat: nil)
        table["0024_release_delivery"] = .expand(caveat: nil)
        return table
    }()

    /// This migration's entry in ``safety``; a migration missing from it counts as a contract.
    var safety: MigrationSafety {
        Self.safety[name] ?? .contract(reason: "no safety recorded for \(name)")
    }
}
