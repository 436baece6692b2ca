"""Keylight's Stripe money paths, driven from outside with events signed by Stripe's own library.

Run by KeylightCLITests/StripeScriptTests against a live `keylight serve`; by hand:

    KEYLIGHT_URL=http://127.0.0.1:8080 KEYLIGHT_ADMIN_TOKEN=... python3 Tests/Stripe/stripe_money_paths.py

The `Stripe-Signature` headers come from `stripe.WebhookSignature.generate_signature_header` (the
official `stripe` package, 16.1.0), so the server's verification is checked against a signer that
shares no code with it. Every id is fresh (uuid), so runs against one server never collide.

Checks (protocol 6.6), one `ok: ...` line each; the first failure prints `FAIL: ...` and exits 1:
  1. unpaid Checkout -> awaiting_payment; async_payment_succeeded mints; the key is picked up once
     and activates through the SDK up to its activation limit
  2. unpaid Checkout then async_payment_failed -> payment_failed, no license, pick-up 402
  3. paid Checkout and a later async_payment_succeeded for it -> one license (already_minted)
  4. an event id is deduplicated per tenant: again to one tenant -> duplicate, to another -> minted
  5. subscription expiry moves only forward with invoice.paid, and ends with subscription.deleted
  6. an unknown key type -> 422 UNKNOWN_PRODUCT, kept and applied once the key type exists
  7. a wrong secret or a stale timestamp -> 400
  8. a paid upgrade of a license already sold (metadata keylight_license_id) changes that license
     once (applied, already_applied, never a new license, same key), and charge.refunded sets it
     back (undone, still active); the session after its refund changes nothing (refunded)
"""
import json
import os
import sys
import time
import urllib.error
import urllib.request
import uuid

import stripe

BASE = os.environ["KEYLIGHT_URL"].rstrip("/")
TOKEN = os.environ["KEYLIGHT_ADMIN_TOKEN"]
DAY = 86_400


def fail(message):
    print(f"FAIL: {message}", flush=True)
    sys.exit(1)


def ok(message):
    print(f"ok: {message}", flush=True)


def unique(prefix):
    return f"{prefix}{uuid.uuid4().hex}"


def call(method, path, body=None, headers=None, raw=None):
    """One HTTP request; answers (status, JSON object or {})."""
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


class Tenant:
    """A tenant with product `app` (two key types) and a Stripe webhook secret."""

    def __init__(self, label):
        self.id = unique(f"{label}-")[:40]
        self.secret = unique("whsec_")
        admin("POST", "/tenants", {"id": self.id, "name": f"Stripe {label}"}, expect=201)
        product = admin("POST", f"/tenants/{self.id}/products", {
            "id": "app", "name": "App", "key_prefix": "SHOP", "trial_duration_days": 14, "free_tier_enabled": False,
        }, expect=201)
        self.sdk_key = product.get("sdk_key") or fail(f"product creation gave no sdk_key: {product}")
        self.key_type("pro", activation_limit=1, duration_days=None)
        self.key_type("sub", activation_limit=3, duration_days=30)
        admin("PUT", f"/tenants/{self.id}/stripe", {"webhook_secret": self.secret})

    def key_type(self, key_type_id, activation_limit=1, duration_days=None):
        admin("POST", f"/tenants/{self.id}/products/app/key-types", {
            "id": key_type_id, "display_name": key_type_id.title(), "activation_limit": activation_limit,
            "duration_days": duration_days, "fallback_access": False, "entitlements": ["pro"],
        }, expect=201)

    def send(self, event, secret=None, timestamp=None):
        """Posts `event` signed by Stripe's library; answers (status, body)."""
        payload = json.dumps(event)
        signature = stripe.WebhookSignature.generate_signature_header(payload, secret or self.secret, timestamp=timestamp)
        return call("POST", f"/stripe/webhook/{self.id}", raw=payload.encode("utf-8"), headers={"Stripe-Signature": signature})

    def deliver(self, event, outcome, what):
        """Sends `event` and requires 200 with `outcome`."""
        status, answer = self.send(event)
        if status != 200 or answer.get("received") is not True or answer.get("outcome") != outcome:
            fail(f"{what}: {event['type']} {event['id']} answered {status} {answer}, expected 200 outcome {outcome}")
        return answer

    def licenses(self, email):
        query = urllib.request.quote(email, safe="")
        return admin("GET", f"/tenants/{self.id}/products/app/licenses?email={query}").get("licenses", [])

    def license(self, license_id):
        return admin("GET", f"/tenants/{self.id}/products/app/licenses/{license_id}")

    def pick_up(self, session_id):
        return call("GET", f"/api/{self.id}/checkout/{session_id}/license")

    def only_license(self, email, what):
        found = self.licenses(email)
        if len(found) != 1:
            fail(f"{what}: {len(found)} licenses for {email}, expected 1: {found}")
        return self.license(found[0]["id"])


def session(tenant, key_type_id, payment_status, email, subscription=None, name_tenant=True):
    """A Checkout Session object as Stripe sends it for a session Keylight created."""
    metadata = {"product_id": "app", "key_type_id": key_type_id}
    if name_tenant:
        metadata["tenant_id"] = tenant.id
    obj = {
        "id": unique("cs_test_"),
        "object": "checkout.session",
        "payment_status": payment_status,
        "customer": unique("cus_"),
        "payment_intent": unique("pi_"),
        "customer_details": {"email": email},
        "metadata": metadata,
        "success_url": "https://shop.example/thanks?session_id={CHECKOUT_SESSION_ID}",
    }
    if subscription:
        obj["subscription"] = subscription
    return obj


def event(event_type, obj, created=None):
    return {
        "id": unique("evt_"),
        "object": "event",
        "type": event_type,
        "created": created or int(time.time()),
        "livemode": False,
        "data": {"object": obj},
    }


def email():
    return f"{uuid.uuid4().hex[:12]}@buyer.example"


def expect_status(answer, status, code, what):
    got_status, body = answer
    if got_status != status or (code is not None and body.get("code") != code):
        fail(f"{what}: answered {got_status} {body}, expected {status}" + (f" code {code}" if code else ""))
    return body


def delayed_payment_succeeds(shop):
    buyer = email()
    cs = session(shop, "pro", "unpaid", buyer)
    shop.deliver(event("checkout.session.completed", cs), "awaiting_payment", "unpaid completed")
    if shop.licenses(buyer):
        fail(f"an unpaid checkout minted a license: {shop.licenses(buyer)}")
    body = expect_status(shop.pick_up(cs["id"]), 202, None, "pick-up while unpaid")
    if body.get("status") != "awaiting_payment":
        fail(f"pick-up while unpaid answered {body}, expected status awaiting_payment")
    ok("an unpaid checkout.session.completed is awaiting_payment: no license, pick-up 202 awaiting_payment")

    paid = dict(cs, payment_status="paid")
    shop.deliver(event("checkout.session.async_payment_succeeded", paid), "minted", "async payment succeeded")
    license = shop.only_license(buyer, "after async_payment_succeeded")
    body = expect_status(shop.pick_up(cs["id"]), 200, None, "first pick-up")
    key = body.get("license_key")
    if not key or not key.startswith("SHOP") or body.get("license_id") != license["id"] \
            or body.get("product_id") != "app" or body.get("key_type_id") != "pro" or body.get("customer_email") != buyer:
        fail(f"first pick-up answered {body}, expected the key of license {license['id']} for {buyer}")
    ok("checkout.session.async_payment_succeeded mints; the success page picks up the key (200)")
    expect_status(shop.pick_up(cs["id"]), 410, "GONE", "second pick-up")
    ok("a second pick-up of the same session is 410 GONE")

    sdk = {"X-Keylight-SDK-Key": shop.sdk_key}
    activated = expect_status(call("POST", f"/{shop.id}/app/activate", {
        "license_key": key, "instance_name": "first mac", "machine_hash": uuid.uuid4().hex,
    }, sdk), 200, None, "activating the picked-up key")
    if activated.get("activated") is not True or not activated.get("instance_id"):
        fail(f"activation answered {activated}, expected activated true with an instance_id")
    expect_status(call("POST", f"/{shop.id}/app/activate", {
        "license_key": key, "instance_name": "second mac", "machine_hash": uuid.uuid4().hex,
    }, sdk), 409, "ACTIVATION_LIMIT_REACHED", "a second machine on an activation_limit 1 key")
    ok("the picked-up key activates through the SDK (200); a second machine is refused (409 ACTIVATION_LIMIT_REACHED)")


def delayed_payment_fails(shop):
    buyer = email()
    cs = session(shop, "pro", "unpaid", buyer)
    shop.deliver(event("checkout.session.completed", cs), "awaiting_payment", "unpaid completed")
    shop.deliver(event("checkout.session.async_payment_failed", cs), "payment_failed", "async payment failed")
    if shop.licenses(buyer):
        fail(f"a failed payment left a license: {shop.licenses(buyer)}")
    expect_status(shop.pick_up(cs["id"]), 402, "PAYMENT_FAILED", "pick-up after a failed payment")
    ok("checkout.session.async_payment_failed mints nothing (payment_failed); pick-up 402 PAYMENT_FAILED")


def paid_then_async_succeeded(shop):
    buyer = email()
    cs = session(shop, "pro", "paid", buyer)
    shop.deliver(event("checkout.session.completed", cs), "minted", "paid completed")
    shop.deliver(event("checkout.session.async_payment_succeeded", cs), "already_minted", "async succeeded after paid")
    shop.only_license(buyer, "paid completed + async_payment_succeeded")
    ok("a paid checkout.session.completed and a later async_payment_succeeded make one license (already_minted)")


def deduplication(shop, other):
    buyer = email()
    # No tenant_id in the metadata: both tenants have product app / key type pro.
    first = event("checkout.session.completed", session(shop, "pro", "paid", buyer, name_tenant=False))
    shop.deliver(first, "minted", "first delivery")
    shop.deliver(first, "duplicate", "same event id again to the same tenant")
    shop.only_license(buyer, "after a duplicate delivery")
    ok("the same event id sent again to the same tenant is a duplicate (still one license)")
    other.deliver(first, "minted", "same event id to another tenant")
    other.only_license(buyer, "the other tenant's license")
    shop.only_license(buyer, "the first tenant after the other tenant minted")
    ok("the same event id sent to a second tenant is processed there too (minted)")
    named = event("checkout.session.completed", session(shop, "pro", "paid", email()))
    other.deliver(named, "ignored", "a session naming another tenant")
    ok("a session whose metadata.tenant_id names another tenant is ignored")


def subscription(shop):
    buyer = email()
    now = int(time.time())
    sub = unique("sub_")
    cs = session(shop, "sub", "paid", buyer, subscription=sub)
    shop.deliver(event("checkout.session.completed", cs), "minted", "subscription checkout")
    license = shop.only_license(buyer, "subscription checkout")
    expires = license.get("expires_at")
    if not isinstance(expires, int) or abs(expires - (now + 30 * DAY)) > 120:
        fail(f"a duration_days 30 license expires at {expires}, expected about {now + 30 * DAY}")
    ok("a subscription checkout mints a license running 30 days")

    def invoice(period_end):
        return event("invoice.paid", {
            "id": unique("in_"), "object": "invoice", "subscription": sub,
            "lines": {"object": "list", "data": [{"period": {"start": now, "end": period_end}}]},
        })

    def expiry():
        return shop.license(license["id"]).get("expires_at")

    shop.deliver(invoice(now + 60 * DAY), "renewed", "invoice.paid through now+60d")
    if expiry() != now + 60 * DAY:
        fail(f"after invoice.paid through {now + 60 * DAY} the license expires at {expiry()}")
    ok("invoice.paid moves expires_at forward to the period end (renewed)")
    shop.deliver(invoice(now + 45 * DAY), "stale", "an older invoice arriving late")
    if expiry() != now + 60 * DAY:
        fail(f"a late older invoice moved expires_at to {expiry()}, expected {now + 60 * DAY}")
    ok("an older invoice arriving late is stale and leaves expires_at unchanged")
    ended = now - 10
    shop.deliver(event("customer.subscription.deleted", {
        "id": sub, "object": "subscription", "status": "canceled", "ended_at": ended,
    }), "expired", "subscription deleted")
    if expiry() != ended:
        fail(f"after customer.subscription.deleted the license expires at {expiry()}, expected ended_at {ended}")
    ok("customer.subscription.deleted sets expires_at to ended_at (expired)")
    shop.deliver(invoice(now + 90 * DAY), "stale", "invoice.paid after the subscription ended")
    if expiry() != ended:
        fail(f"an invoice after deletion moved expires_at to {expiry()}, expected {ended}")
    ok("invoice.paid after the subscription ended is stale and revives nothing")


def unknown_key_type(shop):
    late = unique("late-")[:30]
    buyer = email()
    pending = event("checkout.session.completed", session(shop, late, "paid", buyer))
    expect_status(shop.send(pending), 422, "UNKNOWN_PRODUCT", "an event for an unknown key type")

    def listed(event_id):
        events = admin("GET", f"/tenants/{shop.id}/stripe/events?outcome=unknown_product").get("events", [])
        return next((e for e in events if e.get("id") == event_id), None)

    entry = listed(pending["id"])
    if not entry or entry.get("retryable") is not True or entry.get("outcome") != "unknown_product":
        fail(f"the unknown-product event is listed as {entry}, expected outcome unknown_product, retryable true")
    ok("an event naming an unknown key type is 422 UNKNOWN_PRODUCT and listed as retryable")
    expect_status(shop.send(pending), 422, "UNKNOWN_PRODUCT", "the unknown-product event sent again")
    entry = listed(pending["id"])
    if not entry or entry.get("attempts") != 2:
        fail(f"after a second delivery the event is listed as {entry}, expected attempts 2")
    ok("sent again before the key type exists: 422 again, attempts 2")

    second_buyer = email()
    waiting = event("checkout.session.completed", session(shop, late, "paid", second_buyer))
    expect_status(shop.send(waiting), 422, "UNKNOWN_PRODUCT", "a second unknown-product event")
    shop.key_type(late, activation_limit=1, duration_days=None)
    shop.deliver(pending, "minted", "the unknown-product event after its key type was created")
    license = shop.only_license(buyer, "the event applied late")
    if license.get("key_type_id") != late:
        fail(f"the late license has key type {license.get('key_type_id')}, expected {late}")
    ok("sent again after the key type exists: 200 minted")
    retried = admin("POST", f"/tenants/{shop.id}/stripe/events/{waiting['id']}/retry")
    if retried.get("id") != waiting["id"] or retried.get("outcome") != "minted":
        fail(f"retrying {waiting['id']} answered {retried}, expected outcome minted")
    shop.only_license(second_buyer, "the event applied through the retry call")
    if listed(pending["id"]) or listed(waiting["id"]):
        fail("applied events are still listed as unknown_product")
    ok("a kept unknown-product event applied through the retry call mints")


def bad_signatures(shop):
    forged = event("checkout.session.completed", session(shop, "pro", "paid", email()))
    expect_status(shop.send(forged, secret=unique("whsec_")), 400, None, "an event signed with another secret")
    ok("an event signed with another secret is refused (400)")
    expect_status(shop.send(forged, timestamp=int(time.time()) - 400), 400, None, "an event signed 400 s ago")
    ok("a signature 400 seconds old is refused (400)")
    # Neither attempt recorded the event: a correctly signed delivery of it still applies.
    shop.deliver(forged, "minted", "the same event correctly signed")
    ok("refused deliveries record nothing: the same event, correctly signed, mints")


def paid_upgrade(shop):
    # The target key type is sold new at its own price; an offer needs a price of its own.
    sale, offer = unique("price_"), unique("price_")
    admin("POST", f"/tenants/{shop.id}/products/app/key-types", {
        "id": "team", "display_name": "Team", "activation_limit": 5, "duration_days": None, "fallback_access": False,
        "entitlements": ["pro", "team"], "updates_days": 365, "stripe_price_id": sale,
    }, expect=201)
    restarts = admin("PUT", f"/tenants/{shop.id}/products/app/key-types/team/offers", {"upgrade_restarts_updates": True})
    if restarts.get("upgrade_restarts_updates") is not True:
        fail(f"PUT team offers answered {restarts}, expected upgrade_restarts_updates true")
    admin("PUT", f"/tenants/{shop.id}/products/app/key-types/pro/offers", {"upgrades": [{"to": "team", "stripe_price_id": sale}]}, expect=409)
    offers = admin("PUT", f"/tenants/{shop.id}/products/app/key-types/pro/offers", {
        "upgrades": [{"to": "team", "price_label": "$29", "stripe_price_id": offer}],
    })
    if [(u.get("to"), u.get("stripe_price_id")) for u in offers.get("upgrades", [])] != [("team", offer)]:
        fail(f"PUT pro offers answered {offers}, expected one upgrade to team at {offer}")
    ok("offers: an upgrade at the key type's own sales price is refused (409); at a price of its own it is set")

    buyer = email()
    minted = admin("POST", f"/tenants/{shop.id}/products/app/licenses", {"key_type_id": "pro", "customer_email": buyer}, expect=201)
    key, license_id = minted["license_key"], minted["id"]
    sdk = {"X-Keylight-SDK-Key": shop.sdk_key}

    def activate(what):
        return call("POST", f"/{shop.id}/app/activate", {"license_key": key, "instance_name": what, "machine_hash": uuid.uuid4().hex}, sdk)

    expect_status(activate("first mac"), 200, None, "activating the license before its upgrade")
    expect_status(activate("second mac"), 409, "ACTIVATION_LIMIT_REACHED", "a second machine before the upgrade")
    before = shop.license(license_id)
    if before.get("key_type_id") != "pro" or before.get("activation_limit") != 1 or before.get("updates_until") is not None:
        fail(f"the minted license is {before}, expected key type pro, activation_limit 1, no updates_until")

    def count():
        return len(admin("GET", f"/tenants/{shop.id}/products/app/licenses?limit=500").get("licenses", []))

    licenses = count()
    cs = session(shop, "pro", "paid", buyer)
    cs["metadata"].update({"keylight_license_id": license_id, "keylight_price_id": offer, "keylight_action": "upgrade", "keylight_quantity": "1"})
    now = int(time.time())
    completed = event("checkout.session.completed", cs)
    shop.deliver(completed, "applied", "a paid upgrade")
    upgraded = shop.license(license_id)
    updates = upgraded.get("updates_until")
    if upgraded.get("key_type_id") != "team" or upgraded.get("activation_limit") != 5 or upgraded.get("status") != "active" \
            or "team" not in upgraded.get("entitlements", []) or upgraded.get("masked_key") != before.get("masked_key") \
            or not isinstance(updates, int) or abs(updates - (now + 365 * DAY)) > 120:
        fail(f"after the upgrade the license is {upgraded}, expected key type team, activation_limit 5, entitlement team, "
             f"masked key {before.get('masked_key')}, updates_until about {now + 365 * DAY}")
    shop.deliver(completed, "duplicate", "the upgrade's event again")
    shop.deliver(event("checkout.session.completed", cs), "already_applied", "the upgrade's session under another event id")
    shop.deliver(event("checkout.session.async_payment_succeeded", cs), "already_applied", "async_payment_succeeded for the upgrade")
    if shop.license(license_id) != upgraded:
        fail(f"a repeat of the upgrade changed the license: {shop.license(license_id)}, was {upgraded}")
    if count() != licenses:
        fail(f"the upgrade's deliveries made {count() - licenses} new licenses, expected none")
    expect_status(activate("second mac"), 200, None, "a second machine after the upgrade to a 5-seat key type")
    ok("a paid Stripe upgrade moves the license once: same key, key type, limit, entitlements, updates restarted, no new license")

    refund = {"id": unique("ch_"), "object": "charge", "payment_intent": cs["payment_intent"], "refunded": True,
              "amount": 2900, "amount_refunded": 2900, "currency": "usd"}
    shop.deliver(event("charge.refunded", refund), "undone", "the upgrade's refund")
    undone = shop.license(license_id)
    if undone.get("key_type_id") != "pro" or undone.get("activation_limit") != 1 or undone.get("updates_until") is not None \
            or undone.get("entitlements") != before.get("entitlements") or undone.get("status") != "active" \
            or undone.get("masked_key") != before.get("masked_key") or undone.get("active_instances") != 2:
        fail(f"after the refund the license is {undone}, expected key type pro, activation_limit 1, no updates_until, "
             f"entitlements {before.get('entitlements')}, status active, both machines kept")
    expect_status(activate("third mac"), 409, "ACTIVATION_LIMIT_REACHED", "a third machine after the refund")
    shop.deliver(event("checkout.session.completed", cs), "refunded", "the upgrade's session after its refund")
    if shop.license(license_id) != undone or count() != licenses:
        fail(f"the session after its refund changed something: {shop.license(license_id)}, {count() - licenses} new licenses")
    ok("a Stripe upgrade applies once and its refund sets it back (undone, still active; the session again is refunded)")


def main():
    status, _ = call("GET", "/healthz")
    if status != 200:
        fail(f"GET /healthz answered {status}")
    shop, other = Tenant("shop"), Tenant("shop2")
    ok(f"tenants {shop.id} and {other.id} set up with products, key types and Stripe secrets")
    delayed_payment_succeeds(shop)
    delayed_payment_fails(shop)
    paid_then_async_succeeded(shop)
    deduplication(shop, other)
    subscription(shop)
    unknown_key_type(shop)
    bad_signatures(shop)
    paid_upgrade(shop)
    ok("every Stripe money path holds")


if __name__ == "__main__":
    main()
