/// The sign-in link to a buyer's account in the portal: no key in it, only a link that works
/// once, for 15 minutes.
extension MailTemplates {
    static let accountSubject = "Sign in to your {{tenant_name}} licenses"

    static let accountText = """
    Someone (we hope you) asked to sign in to the licenses bought with this address.
    Open this link within 15 minutes; it works once:

        {{sign_in_url}}

    If you did not ask for this mail, you can ignore it: nobody can sign in without the link.
    """

    static let accountHTML = """
    <!doctype html>
    <html><body style="margin:0;padding:24px;background:#f3f4f6;font-family:-apple-system,BlinkMacSystemFont,'Segoe UI',Helvetica,Arial,sans-serif;color:#111827">
    <table role="presentation" width="560" align="center" cellpadding="0" cellspacing="0" style="background:#ffffff;border-radius:8px;padding:32px"><tr><td>
    <h1 style="font-size:20px;margin:0 0 16px">Sign in to your licenses</h1>
    <p style="margin:0 0 16px">Someone (we hope you) asked to sign in to the licenses bought with this address. The link works once, for 15 minutes.</p>
    <p style="margin:0 0 16px"><a href="{{sign_in_url}}" style="display:inline-block;padding:10px 16px;background:#2563eb;color:#ffffff;border-radius:6px;text-decoration:none">Sign in</a></p>
    <p style="margin:0;color:#6b7280;font-size:13px">If you did not ask for this mail, you can ignore it: nobody can sign in without the link.</p>
    </td></tr></table>
    </body></html>
    """
}
