"""Keylight's merchant-of-record money paths (Paddle Billing, Lemon Squeezy, Polar), driven from
outside against a live `keylight serve` with events signed by each provider's own code or method:

- Paddle: `paddle_billing.Notifications.PaddleSignature.calculate_hmac` (paddle-python-sdk 1.16.1),
  and every request this script sends as valid is first accepted by the SDK's own `Verifier`;
- Polar: `standardwebhooks.Webhook.sign` (standardwebhooks 1.1.0), with Polar's legacy key (the
  UTF-8 bytes of the whole `whsec_…` string) and with a Standard Webhooks base64 secret;
- Lemon Squeezy (no official Python SDK): the documented hex HMAC-SHA256 of the raw body.

Run by KeylightCLITests/MerchantScriptTests; by hand:

    KEYLIGHT_URL=… KEYLIGHT_ADMIN_TOKEN=… MAIL_DIR=… PADDLE_API_PORT=… python3 Tests/Merchants/merchant_money_paths.py

MAIL_DIR is the folder Tests/Mail/smtp_server.py writes received mail to (the server mails through
it); PADDLE_API_PORT is where this script serves a fake Paddle API (`GET /customers/{id}`), the
server having been started with `--paddle-api-base http://127.0.0.1:PORT`.

One `ok: …` line per check; the first failure prints `FAIL: …` and exits 1.
"""
import email
import email.policy
import glob
import hashlib
import hmac
import http.server
import json
import os
import re
import sys
import threading
import time
import urllib.error
import urllib.request
import uuid
from datetime import datetime, timezone

from paddle_billing.Notifications import PaddleSignature, Secret, Verifier
from standardwebhooks import Webhook

BASE = os.environ["KEYLIGHT_URL"].rstrip("/")
TOKEN = os.environ["KEYLIGHT_ADMIN_TOKEN"]
MAIL_DIR = os.environ["MAIL_DIR"]
PADDLE_API_PORT = int(os.environ["PADDLE_API_PORT"])
DAY = 86_400


def fail(message):
    print(f"FAIL: {message}", flush=True)
    sys.exit(1)


def ok(message):
    print(f"ok: {message}", flush=True)


def unique(prefix=""):
    return f"{prefix}{uuid.uuid4().hex}"


def iso(seconds):
    return datetime.fromtimestamp(seconds, timezone.utc).strftime("%Y-%m-%dT%H:%M:%S.%fZ")


def call(method, path, body=None, headers=None, raw=None):
    data = raw if raw is not None else (json.dumps(body).encode() if body is not None else None)
    request = urllib.request.Request(BASE + path, data=data, method=method)
    if data is not None:
        request.add_header("Content-Type", "application/json")
    for name, value in (headers or {}).items():
        request.add_header(name, value)
    try:
        with urllib.request.urlopen(request, timeout=30) as response:
            status, text = response.status, response.read()
    except urllib.error.HTTPError as error:
        status, text = error.code, error.read()
    try:
        parsed = json.loads(text) if text else {}
    except ValueError:
        parsed = {"raw": text.decode("utf-8", "replace")}
    return status, parsed if isinstance(parsed, dict) else {"value": parsed}


def admin(method, path, body=None, expect=200):
    status, answer = call(method, "/admin/v1" + path, body, {"Authorization": f"Bearer {TOKEN}"})
    if status != expect:
        fail(f"{method} /admin/v1{path} answered {status} {answer}, expected {expect}")
    return answer


# MARK: a fake Paddle API (only the customer lookup Keylight makes)

class FakePaddle(http.server.BaseHTTPRequestHandler):
    customers = {}
    authorizations = []

    def do_GET(self):
        FakePaddle.authorizations.append(self.headers.get("Authorization"))
        match = re.fullmatch(r"/customers/(ctm_[a-z0-9]+)", self.path)
        address = FakePaddle.customers.get(match.group(1)) if match else None
        body = json.dumps({"data": {"id": match.group(1), "email": address, "status": "active"}, "meta": {"request_id": "r"}} if address
                          else {"error": {"type": "request_error", "code": "not_found"}}).encode()
        self.send_response(200 if address else 404)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)

    def log_message(self, *args):
        pass


server = http.server.ThreadingHTTPServer(("127.0.0.1", PADDLE_API_PORT), FakePaddle)
threading.Thread(target=server.serve_forever, daemon=True).start()


# MARK: mail and activation

def mails_to(address):
    found = []
    for envelope_path in sorted(glob.glob(os.path.join(MAIL_DIR, "*.json"))):
        # The sink writes the envelope first and the message last (by rename): an envelope still
        # being written, or without its message yet, is read at the next poll.
        try:
            with open(envelope_path) as f:
                envelope = json.load(f)
        except ValueError:
            continue
        if address in envelope.get("rcpt_tos", []):
            try:
                with open(envelope_path[:-5] + ".eml", "rb") as f:
                    found.append(email.message_from_bytes(f.read(), policy=email.policy.default))
            except FileNotFoundError:
                continue
    return found


def mailed_key(address, prefix, what, count=1):
    """The key in the text part of the `count`-th mail to `address`, waiting up to 20 s for it."""
    deadline = time.time() + 20
    while time.time() < deadline:
        found = mails_to(address)
        if len(found) >= count:
            text = found[count - 1].get_body(("plain",)).get_content()
            keys = re.findall(rf"\b{prefix}-[A-Z0-9-]+\b", text)
            if not keys:
                fail(f"{what}: the mail to {address} holds no {prefix}- key: {text[:400]}")
            return keys[0]
        time.sleep(0.1)
    fail(f"{what}: no mail reached {address} in 20 s")


def no_mail(address, what):
    time.sleep(1.5)
    if mails_to(address):
        fail(f"{what}: a mail reached {address}")


class Shop:
    """A tenant selling `app` through all three providers, with its own secrets and catalogue ids."""

    def __init__(self, label, prefix, paddle_api_key=None, polar_secret=None, share_with=None):
        self.id = unique(f"{label}-")[:40]
        self.prefix = prefix
        admin("POST", "/tenants", {"id": self.id, "name": f"Merchant {label}"}, expect=201)
        product = admin("POST", f"/tenants/{self.id}/products", {
            "id": "app", "name": "App", "key_prefix": prefix, "trial_duration_days": 14, "free_tier_enabled": False,
        }, expect=201)
        self.sdk_key = product.get("sdk_key") or fail(f"no sdk_key: {product}")
        # Catalogue ids: a shop sharing another's (two tenants on one merchant account) maps the same ones.
        source = share_with.ids if share_with else {
            "pro": {"paddle_price_id": "pri_" + unique()[:26], "lemonsqueezy_variant_id": str(uuid.uuid4().int % 10**9 + 1), "polar_product_id": str(uuid.uuid4())},
            "sub": {"paddle_price_id": "pri_" + unique()[:26], "lemonsqueezy_variant_id": str(uuid.uuid4().int % 10**9 + 1), "polar_product_id": str(uuid.uuid4())},
        }
        self.ids = source
        for key_type, limit, days in (("pro", 2, None), ("sub", 1, 30)):
            admin("POST", f"/tenants/{self.id}/products/app/key-types", {
                "id": key_type, "display_name": key_type.title(), "activation_limit": limit, "duration_days": days,
                "fallback_access": False, "entitlements": ["pro"],
            }, expect=201)
            answer = admin("PATCH", f"/tenants/{self.id}/products/app/key-types/{key_type}", source[key_type])
            for field, value in source[key_type].items():
                if answer.get(field) != value:
                    fail(f"key type {key_type} answered {field}={answer.get(field)!r}, expected {value!r}")
        self.paddle_api_key = paddle_api_key
        self.paddle_secret = "pdl_ntfset_01" + unique()[:24] + "_" + unique()[:24] + "+/x"
        self.lemon_secret = unique("ls-")[:32]
        self.polar_secret = polar_secret or "whsec_" + unique()[:37]
        paddle = {"webhook_secret": self.paddle_secret}
        if paddle_api_key:
            paddle["api_key"] = paddle_api_key
        settings = admin("PUT", f"/tenants/{self.id}/paddle", paddle)
        if settings.get("api_key_set") is not bool(paddle_api_key) or "webhook_secret" in settings or "api_key" in settings:
            fail(f"PUT paddle answered {settings}")
        admin("PUT", f"/tenants/{self.id}/lemonsqueezy", {"webhook_secret": self.lemon_secret})
        admin("PUT", f"/tenants/{self.id}/polar", {"webhook_secret": self.polar_secret})

    # Paddle: signed with the SDK's own HMAC helper, checked by the SDK's own Verifier.
    def paddle(self, event, secret=None, ts=None, extra_h1=None, verify=True):
        body = json.dumps(event)
        ts = int(time.time()) if ts is None else ts
        h1 = PaddleSignature.calculate_hmac(secret or self.paddle_secret, f"{ts}:{body}".encode("utf-8")).hexdigest()
        header = f"ts={ts};" + (f"h1={extra_h1};" if extra_h1 else "") + f"h1={h1}"
        if verify:
            request = type("Req", (), {"headers": {"Paddle-Signature": header}, "body": body.encode("utf-8")})()
            if Verifier().verify(request, Secret(self.paddle_secret)) is not True:
                fail("paddle-python-sdk's Verifier refused a request this script sends as valid")
        return call("POST", f"/paddle/webhook/{self.id}", raw=body.encode("utf-8"), headers={"Paddle-Signature": header})

    # Lemon Squeezy: the documented hex HMAC-SHA256 of the raw body.
    def lemon(self, event, secret=None, body=None):
        body = body if body is not None else json.dumps(event).encode("utf-8")
        signature = hmac.new((secret or self.lemon_secret).encode("utf-8"), body, hashlib.sha256).hexdigest()
        return call("POST", f"/lemonsqueezy/webhook/{self.id}", raw=body, headers={"X-Signature": signature, "X-Event-Name": event["meta"]["event_name"]})

    # Polar: standardwebhooks, keyed as Polar keys it.
    def polar(self, event, msg_id=None, secret=None, at=None):
        body = json.dumps(event)
        msg_id = msg_id or str(uuid.uuid4())
        at = at or datetime.now(timezone.utc)
        secret = secret or self.polar_secret
        # A legacy Polar secret keys the HMAC with its own UTF-8 bytes; a standard one is base64.
        signer = Webhook(secret.encode("utf-8")) if not self.polar_standard else Webhook(secret)
        signature = signer.sign(msg_id, at, body)
        headers = {"webhook-id": msg_id, "webhook-timestamp": str(int(at.timestamp())), "webhook-signature": signature}
        if at > datetime.fromtimestamp(time.time() - 60, timezone.utc) and secret == self.polar_secret:
            signer.verify(body, headers)  # standardwebhooks' own verifier accepts it
        return call("POST", f"/polar/webhook/{self.id}", raw=body.encode("utf-8"), headers=headers)

    polar_standard = False

    def expect(self, answer, outcome, what):
        status, body = answer
        if status != 200 or body.get("received") is not True or body.get("outcome") != outcome:
            fail(f"{what}: answered {status} {body}, expected 200 outcome {outcome}")

    def refused(self, answer, what):
        status, body = answer
        if status != 400 or body.get("code") != "INVALID_REQUEST":
            fail(f"{what}: answered {status} {body}, expected 400 INVALID_REQUEST")

    def licenses(self, email=None):
        query = f"?email={urllib.request.quote(email, safe='')}" if email else "?limit=500"
        return admin("GET", f"/tenants/{self.id}/products/app/licenses{query}").get("licenses", [])

    def by_order(self, order_id):
        return [l for l in self.licenses() if l.get("payment_order_id") == order_id]

    def activate(self, key, machine):
        return call("POST", f"/{self.id}/app/activate", {"license_key": key, "instance_name": "Mac", "machine_hash": machine},
                    {"X-Keylight-SDK-Key": self.sdk_key})


def whole_path(shop, provider, send, order_id, address, what):
    """payment → license (source and order recorded) → mail → activation."""
    found = shop.by_order(order_id)
    if len(found) != 1 or found[0]["payment_source"] != provider or found[0]["customer_email"] != address or found[0]["status"] != "active":
        fail(f"{what}: licenses of {order_id}: {found}")
    key = mailed_key(address, shop.prefix, what)
    status, body = shop.activate(key, unique("m"))
    if status != 200:
        fail(f"{what}: the mailed key did not activate: {status} {body}")
    audit = admin("GET", f"/audit-log?tenant={shop.id}&limit=500").get("entries", [])
    if not any(e.get("action") == "license.create" and e.get("target") == found[0]["id"] and e.get("actor") == provider for e in audit):
        fail(f"{what}: no license.create audit entry by {provider} for {found[0]['id']}")
    return found[0]


# MARK: Paddle

def paddle_transaction(shop, txn, price, quantity=1, email_=None, customer=None, subscription=None, ends=None, origin="web", status="completed"):
    data = {
        "id": txn, "status": status, "customer_id": customer or unique("ctm_")[:30], "address_id": unique("add_")[:30], "business_id": None,
        "custom_data": {"email": email_} if email_ else None, "subscription_id": subscription, "origin": origin,
        "collection_mode": "automatic", "currency_code": "USD", "invoice_id": unique("inv_")[:30], "invoice_number": "325-10566",
        "billing_period": {"starts_at": iso(time.time()), "ends_at": iso(ends)} if ends else None,
        "items": [{"price": {"id": price, "product_id": "pro_01gsz4t5hdjse780zja8vvr7jg", "billing_cycle": None}, "quantity": quantity, "proration": None}],
        "details": {"totals": {"grand_total": "1000", "currency_code": "USD"}}, "payments": [{"status": "captured"}],
        "created_at": iso(time.time()), "updated_at": iso(time.time()), "billed_at": iso(time.time()),
    }
    return paddle_event("transaction.completed", data)


def paddle_event(event_type, data, event_id=None):
    return {"event_id": event_id or "evt_" + unique()[:26], "event_type": event_type, "occurred_at": iso(time.time()),
            "notification_id": "ntf_" + unique()[:26], "data": data}


def paddle_adjustment(txn, action="refund", status="approved", kind="full", event_type="adjustment.updated"):
    return paddle_event(event_type, {
        "id": unique("adj_")[:30], "action": action, "status": status, "transaction_id": txn, "subscription_id": None,
        "customer_id": unique("ctm_")[:30], "reason": "error", "type": kind, "currency_code": "USD", "items": [],
        "totals": {"total": "1000"}, "created_at": iso(time.time()), "updated_at": iso(time.time()),
    })


def paddle_checks(shop, looked_up):
    pro, sub = shop.ids["pro"]["paddle_price_id"], shop.ids["sub"]["paddle_price_id"]
    # 1. The whole path, delivered twice and under a second event id.
    txn, buyer = "txn_" + unique()[:26], f"{unique('paddle-')[:20]}@buyer.example"
    event = paddle_transaction(shop, txn, pro, email_=buyer)
    shop.expect(shop.paddle(event), "minted", "Paddle transaction.completed")
    shop.expect(shop.paddle(event), "duplicate", "Paddle repeat")
    again = dict(event, event_id="evt_" + unique()[:26])
    shop.expect(shop.paddle(again), "already_minted", "Paddle same transaction, new event id")
    license = whole_path(shop, "paddle", shop.paddle, txn, buyer, "Paddle whole path")
    ok("Paddle: transaction.completed → one license (source paddle, transaction id) → mail → activation; repeats mint nothing")

    # 2. Quantity: one license per seat bought.
    txn3 = "txn_" + unique()[:26]
    shop.expect(shop.paddle(paddle_transaction(shop, txn3, pro, quantity=3, email_=f"{unique('q')[:12]}@buyer.example")), "minted", "Paddle quantity 3")
    if len(shop.by_order(txn3)) != 3:
        fail(f"quantity 3 minted {len(shop.by_order(txn3))} licenses")
    ok("Paddle: quantity 3 mints three licenses")

    # 3. Refunds: pending changes nothing; approved revokes; partial is recorded only; a chargeback revokes.
    shop.expect(shop.paddle(paddle_adjustment(txn, status="pending_approval", event_type="adjustment.created")), "ignored", "pending refund")
    if shop.by_order(txn)[0]["status"] != "active":
        fail("a pending refund revoked the license")
    shop.expect(shop.paddle(paddle_adjustment(txn3, kind="partial")), "partial_refund", "partial refund")
    if any(l["status"] != "active" for l in shop.by_order(txn3)):
        fail("a partial refund revoked licenses")
    shop.expect(shop.paddle(paddle_adjustment(txn)), "revoked", "approved refund")
    if shop.by_order(txn)[0]["status"] != "revoked":
        fail("an approved refund left the license active")
    shop.expect(shop.paddle(paddle_adjustment(txn3, action="chargeback", kind=None)), "revoked", "chargeback")
    if any(l["status"] != "revoked" for l in shop.by_order(txn3)):
        fail("a chargeback left licenses active")
    # Refund before purchase: the purchase that arrives later mints nothing, mails nothing.
    early, early_buyer = "txn_" + unique()[:26], f"{unique('early')[:14]}@buyer.example"
    shop.expect(shop.paddle(paddle_adjustment(early)), "no_license", "refund before purchase")
    shop.expect(shop.paddle(paddle_transaction(shop, early, pro, email_=early_buyer)), "refunded", "purchase after its refund")
    if shop.by_order(early):
        fail("a refunded transaction minted a license")
    no_mail(early_buyer, "refund before purchase")
    ok("Paddle: pending refund nothing, partial recorded, approved refund and chargeback revoke, refund-before-purchase mints nothing")

    # 4. Subscriptions: the first transaction mints to its period's end; renewals extend, never back; cancel ends.
    sub_id, period = "sub_" + unique()[:26], int(time.time()) + 31 * DAY
    txn_sub = "txn_" + unique()[:26]
    shop.expect(shop.paddle(paddle_transaction(shop, txn_sub, sub, email_=f"{unique('s')[:12]}@buyer.example", subscription=sub_id, ends=period, origin="web")), "minted", "subscription purchase")
    first = shop.by_order(txn_sub)[0]
    if abs(first["expires_at"] - period) > 1:
        fail(f"subscription license expires {first['expires_at']}, expected the period end {period}")
    later = period + 30 * DAY
    shop.expect(shop.paddle(paddle_transaction(shop, "txn_" + unique()[:26], sub, subscription=sub_id, ends=later, origin="subscription_recurring")), "renewed", "renewal")
    shop.expect(shop.paddle(paddle_transaction(shop, "txn_" + unique()[:26], sub, subscription=sub_id, ends=period, origin="subscription_recurring")), "stale", "late older renewal")
    if abs(shop.by_order(txn_sub)[0]["expires_at"] - later) > 1:
        fail("a renewal did not extend, or a late one moved expiry back")
    if len([l for l in shop.licenses() if l.get("payment_order_id", "").startswith("txn_") and l["key_type_id"] == "sub"]) != 1:
        fail("a renewal transaction minted a license")
    # A subscription event carries a period nobody has paid for yet (past_due): nothing moves.
    unpaid = later + 30 * DAY
    shop.expect(shop.paddle(paddle_event("subscription.past_due", {"id": sub_id, "status": "past_due", "current_billing_period": {"starts_at": iso(later), "ends_at": iso(unpaid)}, "items": []})), "stale", "past_due")
    if abs(shop.by_order(txn_sub)[0]["expires_at"] - later) > 1:
        fail("a past_due subscription event extended the license")
    # A renewal without the origin Paddle names renewals by still renews (a subscription mints once).
    odd = "txn_" + unique()[:26]
    shop.expect(shop.paddle(paddle_transaction(shop, odd, sub, subscription=sub_id, ends=unpaid, origin="api")), "renewed", "renewal with another origin")
    # Refunding that renewal takes its period back: the licenses expire now; refunded first, a renewal extends nothing.
    shop.expect(shop.paddle(paddle_adjustment(odd)), "expired", "refund of a renewal")
    if shop.by_order(txn_sub)[0]["expires_at"] > int(time.time()):
        fail("a refunded renewal left its period granted")
    early_renewal = "txn_" + unique()[:26]
    shop.expect(shop.paddle(paddle_adjustment(early_renewal)), "no_license", "refund before its renewal")
    shop.expect(shop.paddle(paddle_transaction(shop, early_renewal, sub, subscription=sub_id, ends=unpaid + 30 * DAY, origin="subscription_recurring")), "refunded", "renewal after its refund")
    shop.expect(shop.paddle(paddle_transaction(shop, "txn_" + unique()[:26], sub, subscription=sub_id, ends=unpaid, origin="subscription_recurring")), "renewed", "next paid renewal")
    if abs(shop.by_order(txn_sub)[0]["expires_at"] - unpaid) > 1:
        fail("a paid renewal after a refunded one did not extend")
    canceled = int(time.time()) - 60
    shop.expect(shop.paddle(paddle_event("subscription.canceled", {"id": sub_id, "status": "canceled", "canceled_at": iso(canceled), "current_billing_period": None, "items": []})), "expired", "cancel")
    if shop.by_order(txn_sub)[0]["expires_at"] > int(time.time()):
        fail("a canceled subscription's license did not lapse")
    ok("Paddle: subscription mints to the period end, paid renewals extend (never back, never a new license, not on past_due), a refunded renewal takes its period back, canceled ends")

    # 5. No address in the transaction: the customer's, by customer event or by API lookup.
    customer, buyer2 = "ctm_" + unique()[:26], f"{unique('cust')[:14]}@buyer.example"
    txn_c = "txn_" + unique()[:26]
    if looked_up:
        # Known to Paddle before the purchase arrives: the server's lookup may run at once (an
        # unknown customer is a 404, which is final).
        FakePaddle.customers[customer] = buyer2
    shop.expect(shop.paddle(paddle_transaction(shop, txn_c, pro, customer=customer)), "minted", "no address")
    if not looked_up and shop.by_order(txn_c)[0]["customer_email"] is not None:
        fail("an address appeared from nowhere")
    if looked_up:
        key = mailed_key(buyer2, shop.prefix, "lookup")
        if f"Bearer {looked_up}" not in FakePaddle.authorizations:
            fail(f"the lookup did not send the API key: {FakePaddle.authorizations}")
        ok("Paddle: an address-less purchase is mailed once the customer is looked up with the API key")
    else:
        shop.expect(shop.paddle(paddle_event("customer.created", {"id": customer, "email": buyer2, "name": "B", "status": "active"})), "customer", "customer event")
        key = mailed_key(buyer2, shop.prefix, "customer event")
        ok("Paddle: an address-less purchase is mailed when customer.created tells the address")
    if shop.by_order(txn_c)[0]["customer_email"] != buyer2 or shop.activate(key, unique("m"))[0] != 200:
        fail("the late address was not recorded, or its key did not activate")

    # 6. Unmapped, then mapped and retried.
    price = "pri_" + unique()[:26]
    event = paddle_transaction(shop, "txn_" + unique()[:26], price, email_=f"{unique('u')[:12]}@buyer.example")
    shop.expect(shop.paddle(event), "unmapped", "unmapped price")
    admin("PATCH", f"/tenants/{shop.id}/products/app/key-types/pro", {"paddle_price_id": price})
    retried = admin("POST", f"/tenants/{shop.id}/paddle/events/{event['event_id']}/retry")
    if retried.get("outcome") != "minted":
        fail(f"retry after mapping answered {retried}")
    admin("PATCH", f"/tenants/{shop.id}/products/app/key-types/pro", {"paddle_price_id": pro})
    ok("Paddle: an unmapped purchase is kept and mints once its price is mapped and it is retried")

    # 7. Signatures.
    shop.refused(shop.paddle(paddle_transaction(shop, "txn_" + unique()[:26], pro), secret="pdl_ntfset_wrong", verify=False), "wrong secret")
    shop.refused(shop.paddle(paddle_transaction(shop, "txn_" + unique()[:26], pro), ts=int(time.time()) - 400, verify=False), "stale signature")
    shop.refused(call("POST", f"/paddle/webhook/{shop.id}", raw=b"{}", headers={}), "no signature")
    rotated = paddle_transaction(shop, "txn_" + unique()[:26], pro, email_=f"{unique('r')[:12]}@buyer.example")
    shop.expect(shop.paddle(rotated, extra_h1="0" * 64), "minted", "two h1 during rotation")
    ok("Paddle: wrong secret, stale ts and no signature are 400; two h1 (rotation) accepted")


def paddle_paid_changes(shop):
    """An upgrade and seats bought for a license already sold: applied once each, set back by their refunds."""
    sale, upgrade, seats = ("pri_" + unique()[:26] for _ in range(3))
    admin("POST", f"/tenants/{shop.id}/products/app/key-types", {
        "id": "team", "display_name": "Team", "activation_limit": 10, "duration_days": None, "fallback_access": False,
        "entitlements": ["pro", "team"], "updates_days": 365,
    }, expect=201)
    admin("PATCH", f"/tenants/{shop.id}/products/app/key-types/team", {"paddle_price_id": sale})
    admin("PUT", f"/tenants/{shop.id}/products/app/key-types/pro/offers", {"upgrades": [{"to": "team", "paddle_price_id": sale}]}, expect=409)
    # Offers belong to the license's current key type: pro offers the upgrade, team (once there) seats.
    offers = admin("PUT", f"/tenants/{shop.id}/products/app/key-types/pro/offers", {"upgrades": [{"to": "team", "price_label": "$29", "paddle_price_id": upgrade}]})
    if [u.get("paddle_price_id") for u in offers.get("upgrades", [])] != [upgrade]:
        fail(f"PUT pro offers answered {offers}")
    offers = admin("PUT", f"/tenants/{shop.id}/products/app/key-types/team/offers", {"seats": {"price_label": "$9 per seat", "paddle_price_id": seats}})
    if offers.get("seats", {}).get("paddle_price_id") != seats:
        fail(f"PUT team offers answered {offers}")

    buyer = f"{unique('change')[:16]}@buyer.example"
    minted = admin("POST", f"/tenants/{shop.id}/products/app/licenses", {"key_type_id": "pro", "customer_email": buyer}, expect=201)
    key, license_id = minted["license_key"], minted["id"]
    if shop.activate(key, unique("m"))[0] != 200:
        fail("the admin-minted license did not activate")

    def license():
        return admin("GET", f"/tenants/{shop.id}/products/app/licenses/{license_id}")

    def change(price, quantity):
        event = paddle_transaction(shop, "txn_" + unique()[:26], price, quantity=quantity)
        event["data"]["custom_data"] = {"keylight_license_id": license_id, "email": buyer}
        return event

    before, count = license(), len(shop.licenses())
    if before.get("key_type_id") != "pro" or before.get("activation_limit") != 2 or before.get("activation_limit_override") is not None:
        fail(f"the minted license is {before}, expected key type pro, activation_limit 2, no override")

    bought = change(upgrade, 1)
    shop.expect(shop.paddle(bought), "applied", "a paid upgrade")
    upgraded = license()
    if upgraded.get("key_type_id") != "team" or upgraded.get("activation_limit") != 10 or upgraded.get("updates_until") is not None \
            or "team" not in upgraded.get("entitlements", []) or upgraded.get("masked_key") != before.get("masked_key") or upgraded.get("status") != "active":
        fail(f"after the upgrade the license is {upgraded}, expected key type team, activation_limit 10, entitlement team, "
             f"no updates_until (the target does not restart updates), masked key {before.get('masked_key')}")
    shop.expect(shop.paddle(bought), "duplicate", "the upgrade's event again")
    shop.expect(shop.paddle(dict(bought, event_id="evt_" + unique()[:26])), "already_applied", "the upgrade's transaction under another event id")

    extra = change(seats, 3)
    shop.expect(shop.paddle(extra), "applied", "three seats")
    seated = license()
    if seated.get("key_type_id") != "team" or seated.get("activation_limit") != 13 or seated.get("activation_limit_override") != 13:
        fail(f"after three seats the license is {seated}, expected activation_limit and override 13")
    shop.expect(shop.paddle(dict(extra, event_id="evt_" + unique()[:26])), "already_applied", "the seats' transaction under another event id")
    if license() != seated or len(shop.licenses()) != count or shop.by_order(bought["data"]["id"]) or shop.by_order(extra["data"]["id"]):
        fail(f"a repeat changed the license or made licenses: {license()}, {len(shop.licenses()) - count} new")
    if shop.activate(key, unique("m"))[0] != 200 or shop.activate(key, unique("m"))[0] != 200:
        fail("the upgraded key did not activate more machines")
    ok("Paddle: an upgrade and seats bought for a license change it once each (applied, already_applied): same key, no new license")

    # Refunded out of order: the upgrade first, then the seats; each sets back only its own fields.
    shop.expect(shop.paddle(paddle_adjustment(bought["data"]["id"], event_type="adjustment.created")), "undone", "the upgrade's refund")
    after = license()
    if after.get("key_type_id") != "pro" or after.get("activation_limit") != 13 or after.get("status") != "active" \
            or after.get("entitlements") != before.get("entitlements"):
        fail(f"after the upgrade's refund the license is {after}, expected key type pro with the seats' limit 13, entitlements {before.get('entitlements')}, active")
    shop.expect(shop.paddle(paddle_adjustment(extra["data"]["id"], event_type="adjustment.created")), "undone", "the seats' refund")
    after = license()
    if after.get("key_type_id") != "pro" or after.get("activation_limit") != 2 or after.get("activation_limit_override") is not None \
            or after.get("status") != "active" or after.get("masked_key") != before.get("masked_key") or after.get("active_instances") != 3:
        fail(f"after both refunds the license is {after}, expected key type pro, activation_limit 2, no override, active, its 3 machines kept")
    if shop.activate(key, unique("m"))[0] != 409:
        fail("a fourth machine activated on a license set back to 2 seats")
    shop.expect(shop.paddle(dict(extra, event_id="evt_" + unique()[:26])), "refunded", "the seats' transaction after its refund")
    if license() != after or len(shop.licenses()) != count:
        fail(f"a refunded transaction changed the license: {license()}")
    ok("a Paddle upgrade and seats apply once and their refunds set them back (undone, field by field, still active)")


# MARK: Lemon Squeezy

def lemon_order(order_id, variant, status="paid", email_=None, quantity=1, refunded=False, test_mode=False, updated=None, event="order_created"):
    return {
        "meta": {"event_name": event, "custom_data": {"user_id": "123"}, "test_mode": test_mode, "webhook_id": str(uuid.uuid4())},
        "data": {"type": "orders", "id": str(order_id), "attributes": {
            "store_id": 1, "customer_id": 7, "identifier": str(uuid.uuid4()), "order_number": order_id, "user_name": "Buyer",
            "user_email": email_ or "someone@buyer.example", "currency": "USD", "subtotal": 999, "total": 1199, "refunded_amount": 1199 if refunded else 0,
            "status": status, "refunded": refunded, "refunded_at": iso(time.time()) if refunded else None,
            "first_order_item": {"id": 1, "order_id": order_id, "product_id": 1, "variant_id": int(variant), "price_id": 1, "quantity": quantity,
                                 "product_name": "App", "variant_name": "Pro", "price": 999, "test_mode": test_mode},
            "created_at": iso(time.time()), "updated_at": updated or iso(time.time()), "test_mode": test_mode,
        }},
    }


def lemon_subscription(sub_id, order_id, variant, status, renews=None, ends=None, event="subscription_updated"):
    return {
        "meta": {"event_name": event},
        "data": {"type": "subscriptions", "id": str(sub_id), "attributes": {
            "store_id": 1, "customer_id": 7, "order_id": order_id, "order_item_id": 1, "product_id": 1, "variant_id": int(variant),
            "user_email": "s@buyer.example", "status": status, "cancelled": status == "cancelled", "renews_at": iso(renews) if renews else None,
            "ends_at": iso(ends) if ends else None, "trial_ends_at": None, "test_mode": False, "created_at": iso(time.time()), "updated_at": iso(time.time()),
        }},
    }


def lemon_checks(shop):
    pro, sub = shop.ids["pro"]["lemonsqueezy_variant_id"], shop.ids["sub"]["lemonsqueezy_variant_id"]
    order, buyer = uuid.uuid4().int % 10**9, f"{unique('lemon-')[:20]}@buyer.example"
    event = lemon_order(order, pro, email_=buyer)
    shop.expect(shop.lemon(event), "minted", "order_created")
    shop.expect(shop.lemon(event), "duplicate", "the same delivery again")
    shop.expect(shop.lemon(lemon_order(order, pro, email_=buyer, updated=iso(time.time() + 5))), "already_minted", "the same order, another body")
    whole_path(shop, "lemonsqueezy", shop.lemon, str(order), buyer, "Lemon Squeezy whole path")
    ok("Lemon Squeezy: order_created → one license → mail → activation; repeats mint nothing")

    shop.expect(shop.lemon(lemon_order(uuid.uuid4().int % 10**9, pro, status="pending")), "unpaid", "pending order")
    shop.expect(shop.lemon(lemon_order(uuid.uuid4().int % 10**9, pro, test_mode=True)), "test_mode", "test-mode order")
    partial = lemon_order(order, pro, status="partial_refund", event="order_refunded", updated=iso(time.time() + 8))
    shop.expect(shop.lemon(partial), "partial_refund", "partial refund")
    shop.expect(shop.lemon(lemon_order(order, pro, status="refunded", refunded=True, event="order_refunded")), "revoked", "order_refunded")
    if shop.by_order(str(order))[0]["status"] != "revoked":
        fail("order_refunded left the license active")
    early = uuid.uuid4().int % 10**9
    shop.expect(shop.lemon(lemon_order(early, pro, status="refunded", refunded=True, event="order_refunded")), "no_license", "refund before order")
    shop.expect(shop.lemon(lemon_order(early, pro)), "refunded", "order after its refund")
    if shop.by_order(str(early)):
        fail("a refunded order minted")
    ok("Lemon Squeezy: pending and test-mode orders mint nothing; partial refund recorded; refunds revoke, before or after the order")

    # Subscription told before its order: the order's license follows it.
    sub_order, sub_id = uuid.uuid4().int % 10**9, uuid.uuid4().int % 10**9
    renews = int(time.time()) + 32 * DAY
    shop.expect(shop.lemon(lemon_subscription(sub_id, sub_order, sub, "active", renews=renews, event="subscription_created")), "no_license", "subscription first")
    shop.expect(shop.lemon(lemon_order(sub_order, sub, email_=f"{unique('ls')[:12]}@buyer.example")), "minted", "its order")
    license = shop.by_order(str(sub_order))[0]
    if abs(license["expires_at"] - renews) > 1:
        fail(f"Lemon Squeezy subscription license expires {license['expires_at']}, expected {renews}")
    shop.expect(shop.lemon(lemon_subscription(sub_id, sub_order, sub, "active", renews=renews + 30 * DAY)), "renewed", "renewal")
    shop.expect(shop.lemon(lemon_subscription(sub_id, sub_order, sub, "past_due", renews=renews + 60 * DAY)), "stale", "past_due")
    if abs(shop.by_order(str(sub_order))[0]["expires_at"] - (renews + 30 * DAY)) > 1:
        fail("a past_due Lemon Squeezy subscription extended its license")
    invoice = {"meta": {"event_name": "subscription_payment_refunded"}, "data": {"type": "subscription-invoices", "id": str(uuid.uuid4().int % 10**9), "attributes": {
        "subscription_id": sub_id, "customer_id": 7, "user_email": "s@buyer.example", "billing_reason": "renewal", "status": "refunded", "refunded": True, "total": 999}}}
    shop.expect(shop.lemon(invoice), "expired", "subscription_payment_refunded")
    if shop.by_order(str(sub_order))[0]["expires_at"] > int(time.time()):
        fail("a refunded Lemon Squeezy renewal left its period granted")
    shop.expect(shop.lemon(lemon_subscription(sub_id, sub_order, sub, "active", renews=renews + 90 * DAY)), "renewed", "paid again")
    shop.expect(shop.lemon(lemon_subscription(sub_id, sub_order, sub, "expired", ends=int(time.time()) - 10, event="subscription_expired")), "expired", "expired")
    if shop.by_order(str(sub_order))[0]["expires_at"] > int(time.time()):
        fail("an expired subscription's license did not lapse")
    ok("Lemon Squeezy: a subscription told before its order still governs it; paid renewals extend (past_due does not); a refunded renewal takes its period back; expired ends")

    shop.refused(shop.lemon(lemon_order(uuid.uuid4().int % 10**9, pro), secret="wrong-secret"), "wrong secret")
    shop.refused(call("POST", f"/lemonsqueezy/webhook/{shop.id}", raw=b"{}", headers={"X-Signature": "0" * 64}), "bad signature")
    shop.refused(call("POST", f"/lemonsqueezy/webhook/{shop.id}", raw=b"{}"), "no signature")
    ok("Lemon Squeezy: wrong or missing X-Signature is 400")


# MARK: Polar

def polar_order(order_id, product, status="paid", email_=None, reason="purchase", subscription=None, period_end=None, event="order.paid"):
    return {"type": event, "timestamp": iso(time.time()), "data": {
        "id": order_id, "status": status, "paid": status == "paid", "billing_reason": reason, "customer_id": str(uuid.uuid4()),
        "product_id": product, "subscription_id": subscription, "total_amount": 1000, "refunded_amount": 0, "currency": "usd",
        "metadata": {}, "customer": {"id": str(uuid.uuid4()), "email": email_ or "someone@buyer.example", "external_id": None},
        "product": {"id": product, "name": "App"},
        "subscription": {"id": subscription, "current_period_end": iso(period_end)} if subscription else None,
        "items": [], "created_at": iso(time.time()), "modified_at": None,
    }}


def polar_subscription(sub_id, product, status, period_end=None, ended=None, event="subscription.updated"):
    return {"type": event, "timestamp": iso(time.time()), "data": {
        "id": sub_id, "status": status, "current_period_end": iso(period_end) if period_end else None, "cancel_at_period_end": False,
        "ended_at": iso(ended) if ended else None, "ends_at": None, "product_id": product, "customer_id": str(uuid.uuid4()),
    }}


def polar_checks(shop):
    pro, sub = shop.ids["pro"]["polar_product_id"], shop.ids["sub"]["polar_product_id"]
    order, buyer = str(uuid.uuid4()), f"{unique('polar-')[:20]}@buyer.example"
    event, delivery = polar_order(order, pro, email_=buyer), str(uuid.uuid4())
    shop.expect(shop.polar(event, msg_id=delivery), "minted", "order.paid")
    shop.expect(shop.polar(event, msg_id=delivery), "duplicate", "the same webhook-id")
    shop.expect(shop.polar(event), "already_minted", "the same order, another webhook-id")
    whole_path(shop, "polar", shop.polar, order, buyer, "Polar whole path")
    ok("Polar: order.paid → one license → mail → activation; deduplicated by webhook-id and by order")

    shop.expect(shop.polar(polar_order(order, pro, status="partially_refunded", event="order.refunded")), "partial_refund", "partial refund")
    shop.expect(shop.polar(polar_order(order, pro, status="refunded", event="order.refunded")), "revoked", "refund")
    early = str(uuid.uuid4())
    shop.expect(shop.polar(polar_order(early, pro, status="refunded", event="order.refunded")), "no_license", "refund first")
    shop.expect(shop.polar(polar_order(early, pro)), "refunded", "order after refund")
    if shop.by_order(early):
        fail("a refunded Polar order minted")
    ok("Polar: partial refunds recorded; order.refunded revokes, before or after order.paid")

    sub_id, order_s, end = str(uuid.uuid4()), str(uuid.uuid4()), int(time.time()) + 31 * DAY
    shop.expect(shop.polar(polar_order(order_s, sub, email_=f"{unique('ps')[:12]}@buyer.example", reason="subscription_create", subscription=sub_id, period_end=end)), "minted", "subscription order")
    if abs(shop.by_order(order_s)[0]["expires_at"] - end) > 1:
        fail("Polar subscription license does not run to the period end")
    cycle = str(uuid.uuid4())
    shop.expect(shop.polar(polar_order(cycle, sub, reason="subscription_cycle", subscription=sub_id, period_end=end + 30 * DAY)), "renewed", "cycle")
    # Polar moves the period before the cycle's order is paid: a subscription event extends nothing.
    shop.expect(shop.polar(polar_subscription(sub_id, sub, "active", period_end=end + 60 * DAY)), "stale", "subscription.updated")
    if abs(shop.by_order(order_s)[0]["expires_at"] - (end + 30 * DAY)) > 1:
        fail("a Polar subscription event extended the license")
    shop.expect(shop.polar(polar_order(cycle, sub, status="refunded", event="order.refunded")), "expired", "refunded cycle")
    if shop.by_order(order_s)[0]["expires_at"] > int(time.time()):
        fail("a refunded Polar cycle left its period granted")
    if len([l for l in shop.licenses() if l["key_type_id"] == "sub" and l["payment_source"] == "polar"]) != 1:
        fail("a subscription_cycle order minted a license")
    shop.expect(shop.polar(polar_subscription(sub_id, sub, "canceled", ended=int(time.time()) - 5, event="subscription.revoked")), "expired", "revoked")
    if shop.by_order(order_s)[0]["expires_at"] > int(time.time()):
        fail("a revoked Polar subscription's license did not lapse")
    ok("Polar: subscription orders mint to the period end, paid cycles extend (subscription events do not), a refunded cycle takes its period back, subscription.revoked ends")

    shop.refused(shop.polar(polar_order(str(uuid.uuid4()), pro), secret="whsec_wrong0000000000000000000000000000000"), "wrong secret")
    shop.refused(shop.polar(polar_order(str(uuid.uuid4()), pro), at=datetime.fromtimestamp(time.time() - 400, timezone.utc)), "stale")
    shop.refused(call("POST", f"/polar/webhook/{shop.id}", raw=b"{}", headers={"webhook-id": "x"}), "no signature")
    ok("Polar: wrong secret, stale timestamp and missing headers are 400")


def main():
    a = Shop("mor-a", "MORA", paddle_api_key="pdl_live_apikey_" + unique()[:20])
    paddle_checks(a, looked_up=a.paddle_api_key)
    paddle_paid_changes(a)
    lemon_checks(a)
    polar_checks(a)

    # Another tenant on the same merchant accounts (same catalogue ids, its own secrets): no
    # address lookup (customer events instead), a standard base64 Polar secret, and isolation.
    b = Shop("mor-b", "MORB", polar_secret="whsec_" + __import__("base64").b64encode(os.urandom(32)).decode(), share_with=a)
    b.polar_standard = True
    paddle_checks(b, looked_up=None)
    ok("Polar: a Standard Webhooks (base64) secret is accepted as well as Polar's legacy one")
    order = str(uuid.uuid4())
    event, delivery = polar_order(order, a.ids["pro"]["polar_product_id"], email_=f"{unique('both')[:12]}@buyer.example"), str(uuid.uuid4())
    a.expect(a.polar(event, msg_id=delivery), "minted", "tenant A")
    b.expect(b.polar(event, msg_id=delivery), "minted", "tenant B, same delivery")
    a.expect(a.polar(polar_order(order, a.ids["pro"]["polar_product_id"], status="refunded", event="order.refunded")), "revoked", "refund at A")
    if a.by_order(order)[0]["status"] != "revoked" or b.by_order(order)[0]["status"] != "active":
        fail("a refund at one tenant reached the other's license")
    a.refused(b.paddle(paddle_transaction(b, "txn_" + unique()[:26], a.ids["pro"]["paddle_price_id"]), secret=a.paddle_secret, verify=False), "A's secret at B")
    ok("tenants: one payment seen by two tenants mints one license in each, a refund at one leaves the other's, secrets do not cross")
    ok("every merchant-of-record money path holds")


if __name__ == "__main__":
    main()
