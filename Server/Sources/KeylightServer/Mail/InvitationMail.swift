/// An invitation to a tenant's team: a link that works once, until it expires. No secret but the link.
extension MailTemplates {
    static let invitationSubject = "You are invited to {{tenant_name}} on Keylight"

    static let invitationText = """
    You are invited to join {{tenant_name}}'s team in its Keylight dashboard.
    Open this link to accept; it works once and expires in 7 days:

        {{invite_url}}

    If you did not expect this mail, you can ignore it.
    """

    static let invitationHTML = """
    <!doctype html>
    <html><body style="margin:0;padding:24px;background:#f3f4f6;font-family:-apple-system,BlinkMacSystemFont,'Segoe UI',Helvetica,Arial,sans-serif;color:#111827">
    <table role="presentation" width="560" align="center" cellpadding="0" cellspacing="0" style="background:#ffffff;border-radius:8px;padding:32px"><tr><td>
    <h1 style="font-size:20px;margin:0 0 16px">Join {{tenant_name}}</h1>
    <p style="margin:0 0 16px">You are invited to join {{tenant_name}}'s team in its Keylight dashboard. The link works once and expires in 7 days.</p>
    <p style="margin:0 0 16px"><a href="{{invite_url}}" style="display:inline-block;padding:10px 16px;background:#2563eb;color:#ffffff;border-radius:6px;text-decoration:none">Accept the invitation</a></p>
    <p style="margin:0;color:#6b7280;font-size:13px">If you did not expect this mail, you can ignore it.</p>
    </td></tr></table>
    </body></html>
    """
}
