"""Reads one received mail with Python's own email parser (an independent reader of what
Keylight wrote) and prints JSON: the decoded headers, both alternative parts, and the MIME structure.

    python3 read_mail.py FILE.eml"""
import email, email.policy, json, sys

with open(sys.argv[1], "rb") as f:
    raw = f.read()
message = email.message_from_bytes(raw, policy=email.policy.default)
plain = message.get_body(("plain",))
html = message.get_body(("html",))
print(json.dumps({
    "from": str(message["From"]),
    "from_name": message["From"].addresses[0].display_name if message["From"] else None,
    "from_address": message["From"].addresses[0].addr_spec if message["From"] else None,
    "to": str(message["To"]),
    "reply_to": str(message["Reply-To"]) if message["Reply-To"] else None,
    "subject": str(message["Subject"]),
    "message_id": message["Message-ID"],
    "date": message["Date"],
    "date_parsed": message["Date"].datetime.isoformat() if message["Date"] else None,
    "content_type": message.get_content_type(),
    "parts": [part.get_content_type() for part in message.iter_parts()] if message.is_multipart() else [],
    "text": plain.get_content() if plain else None,
    "html": html.get_content() if html else None,
    "header_names": [name for name, _ in message.items()],
    "defects": [str(d) for d in message.defects],
    "max_line": max(len(line) for line in raw.split(b"\r\n")),
}))
