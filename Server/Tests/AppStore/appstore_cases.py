"""App Store signed data for Keylight's tests, and Apple's own verdict on each piece.

Builds a test certificate chain shaped like Apple's (a root; an intermediate carrying Apple's
marker extension 1.2.840.113635.100.6.2.1; a leaf carrying 1.2.840.113635.100.6.11.1), signs
StoreKit 2 transactions with it as the App Store does (a JWS, ES256, the chain in `x5c`), and asks
Apple's app-store-server-library (`SignedDataVerifier`, given the same test root, online checks
off) what it makes of each. Keylight's tests then hold the server to the same verdicts.

    python3 appstore_cases.py OUT_DIR [--bundle com.acme.app] [--transactions N]

Writes OUT_DIR/root.pem (the test root), OUT_DIR/other-root.pem (a root that signs nothing here)
and prints JSON: {"cases": [{"name", "jws", "apple": "ok" | "<VerificationStatus>", "environment",
"original_transaction_id", "product_id"}], "notifications": […]}.
"""
import argparse
import base64
import datetime
import json
import os
import sys
import time
import uuid

from cryptography import x509
from cryptography.hazmat.primitives import hashes, serialization
from cryptography.hazmat.primitives.asymmetric import ec
from cryptography.hazmat.primitives.asymmetric.utils import decode_dss_signature
from cryptography.x509.oid import NameOID

from appstoreserverlibrary.models.Environment import Environment
from appstoreserverlibrary.signed_data_verifier import SignedDataVerifier, VerificationException

LEAF_MARKER = x509.ObjectIdentifier("1.2.840.113635.100.6.11.1")
INTERMEDIATE_MARKER = x509.ObjectIdentifier("1.2.840.113635.100.6.2.1")
NULL = b"\x05\x00"
DAY = datetime.timedelta(days=1)


def name(text):
    return x509.Name([x509.NameAttribute(NameOID.COMMON_NAME, text), x509.NameAttribute(NameOID.ORGANIZATION_NAME, "Keylight Tests")])


def certificate(subject, key, issuer, issuer_key, ca, marker=None, not_before=None, not_after=None):
    now = datetime.datetime.now(datetime.timezone.utc)
    builder = (x509.CertificateBuilder().subject_name(name(subject)).issuer_name(name(issuer)).public_key(key.public_key())
               .serial_number(x509.random_serial_number())
               .not_valid_before(not_before or now - 3650 * DAY).not_valid_after(not_after or now + 3650 * DAY)
               .add_extension(x509.BasicConstraints(ca=ca, path_length=None), critical=True)
               .add_extension(x509.KeyUsage(digital_signature=not ca, content_commitment=False, key_encipherment=False, data_encipherment=False,
                                            key_agreement=False, key_cert_sign=ca, crl_sign=ca, encipher_only=False, decipher_only=False), critical=True)
               .add_extension(x509.SubjectKeyIdentifier.from_public_key(key.public_key()), critical=False))
    if issuer_key is not key:
        builder = builder.add_extension(x509.AuthorityKeyIdentifier.from_issuer_public_key(issuer_key.public_key()), critical=False)
    if marker is not None:
        builder = builder.add_extension(x509.UnrecognizedExtension(marker, NULL), critical=False)
    return builder.sign(issuer_key, hashes.SHA256())


class Chain:
    """A root, an intermediate and a leaf; the markers and the leaf's validity are chosen per chain."""

    def __init__(self, root=None, intermediate_marker=True, leaf_marker=True, leaf_not_after=None, leaf_not_before=None):
        self.root_key, self.root = root or Chain.make_root("Keylight Test Root")
        self.intermediate_key = ec.generate_private_key(ec.SECP256R1())
        self.intermediate = certificate("Keylight Test WWDR", self.intermediate_key, "Keylight Test Root" if root is None else root[1].subject.rfc4514_string().split("CN=")[1].split(",")[0],
                                        self.root_key, ca=True, marker=INTERMEDIATE_MARKER if intermediate_marker else None)
        self.leaf_key = ec.generate_private_key(ec.SECP256R1())
        self.leaf = certificate("Keylight Test StoreKit", self.leaf_key, "Keylight Test WWDR", self.intermediate_key, ca=False,
                                marker=LEAF_MARKER if leaf_marker else None, not_after=leaf_not_after, not_before=leaf_not_before)

    @staticmethod
    def make_root(common_name):
        key = ec.generate_private_key(ec.SECP256R1())
        return key, certificate(common_name, key, common_name, key, ca=True)

    def sign(self, payload, tamper=False):
        header = {"alg": "ES256", "x5c": [base64.b64encode(c.public_bytes(serialization.Encoding.DER)).decode() for c in (self.leaf, self.intermediate, self.root)]}
        encode = lambda data: base64.urlsafe_b64encode(data).rstrip(b"=").decode()
        signing_input = encode(json.dumps(header).encode()) + "." + encode(json.dumps(payload).encode())
        r, s = decode_dss_signature(self.leaf_key.sign(signing_input.encode(), ec.ECDSA(hashes.SHA256())))
        signature = encode(r.to_bytes(32, "big") + s.to_bytes(32, "big"))
        if tamper:
            tampered = dict(payload, productId=payload["productId"] + ".gold")
            signing_input = signing_input.split(".")[0] + "." + encode(json.dumps(tampered).encode())
        return signing_input + "." + signature


def transaction(bundle, product, environment, original=None, signed_ms=None, expires_ms=None, revoked=False):
    now_ms = int(time.time() * 1000)
    original = original or str(2000000000000000 + uuid.uuid4().int % 10**15)
    payload = {
        "transactionId": original, "originalTransactionId": original, "bundleId": bundle, "productId": product,
        "purchaseDate": now_ms - 60_000, "originalPurchaseDate": now_ms - 60_000, "quantity": 1,
        "type": "Auto-Renewable Subscription" if expires_ms else "Non-Consumable", "inAppOwnershipType": "PURCHASED",
        "signedDate": signed_ms or now_ms, "environment": environment, "transactionReason": "PURCHASE",
        "storefront": "USA", "storefrontId": "143441", "price": 9990, "currency": "USD",
    }
    if expires_ms:
        payload["expiresDate"] = expires_ms
        payload["webOrderLineItemId"] = str(uuid.uuid4().int % 10**15)
    if revoked:
        payload["revocationDate"] = now_ms - 1000
        payload["revocationReason"] = 0
    return payload


def notification(chain, bundle, kind, signed_transaction, environment="Production", subtype=None):
    payload = {"notificationType": kind, "notificationUUID": str(uuid.uuid4()), "version": "2.0", "signedDate": int(time.time() * 1000),
               "data": {"bundleId": bundle, "appAppleId": 1234567890, "environment": environment, "signedTransactionInfo": signed_transaction}}
    if subtype:
        payload["subtype"] = subtype
    return chain.sign(payload)


def apple_notification_verdict(jws, root_der, bundle, environment):
    verifier = SignedDataVerifier([root_der], False, Environment(environment), bundle, 1234567890)
    try:
        verifier.verify_and_decode_notification(jws)
        return "ok"
    except VerificationException as error:
        return error.status.name


def apple_verdict(jws, root_der, bundle, environment):
    verifier = SignedDataVerifier([root_der], False, Environment(environment), bundle, 1234567890)
    try:
        verifier.verify_and_decode_signed_transaction(jws)
        return "ok"
    except VerificationException as error:
        return error.status.name


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("out")
    parser.add_argument("--bundle", default="com.acme.app")
    parser.add_argument("--product", default="com.acme.app.pro")
    args = parser.parse_args()
    os.makedirs(args.out, exist_ok=True)
    good = Chain()
    other_root = Chain.make_root("Not Apple Root")
    for path, cert in (("root.pem", good.root), ("other-root.pem", other_root[1])):
        with open(os.path.join(args.out, path), "wb") as f:
            f.write(cert.public_bytes(serialization.Encoding.PEM))
    root_der = good.root.public_bytes(serialization.Encoding.DER)
    now = datetime.datetime.now(datetime.timezone.utc)
    long_ago_ms = int((now - 800 * DAY).timestamp() * 1000)
    expired_leaf = Chain(root=(good.root_key, good.root), leaf_not_after=now - 400 * DAY, leaf_not_before=now - 1000 * DAY)
    cases = []

    def case(case_name, chain, payload, tamper=False, verify_environment="Production"):
        jws = chain.sign(payload, tamper=tamper)
        cases.append({"name": case_name, "jws": jws, "apple": apple_verdict(jws, root_der, args.bundle, verify_environment),
                      "environment": payload["environment"], "original_transaction_id": payload["originalTransactionId"],
                      "product_id": payload["productId"]})

    case("valid", good, transaction(args.bundle, args.product, "Production"))
    case("tampered payload", good, transaction(args.bundle, args.product, "Production"), tamper=True)
    case("wrong root", Chain(root=other_root), transaction(args.bundle, args.product, "Production"))
    case("leaf without marker", Chain(root=(good.root_key, good.root), leaf_marker=False), transaction(args.bundle, args.product, "Production"))
    case("intermediate without marker", Chain(root=(good.root_key, good.root), intermediate_marker=False), transaction(args.bundle, args.product, "Production"))
    case("leaf expired at signedDate", expired_leaf, transaction(args.bundle, args.product, "Production"))
    # Valid then: a leaf that has expired since is judged at signedDate, as Apple's library judges it.
    case("leaf valid at an old signedDate", expired_leaf, transaction(args.bundle, args.product, "Production", signed_ms=long_ago_ms))
    case("wrong bundle id", good, transaction("com.evil.app", args.product, "Production"))
    case("sandbox", good, transaction(args.bundle, args.product, "Sandbox"))
    # Valid signatures the server refuses for what they say (Apple's library has no view on these).
    extra = {
        "race": good.sign(transaction(args.bundle, args.product, "Production")),
        "unmapped": good.sign(transaction(args.bundle, args.product + ".unknown", "Production")),
        "revoked": good.sign(transaction(args.bundle, args.product, "Production", revoked=True)),
        "expired_subscription": good.sign(transaction(args.bundle, args.product, "Production", expires_ms=int(time.time() * 1000) - 3_600_000)),
    }
    original = str(2000000000000000 + uuid.uuid4().int % 10**15)
    month = 30 * 86_400_000
    now_ms = int(time.time() * 1000)
    extra["subscription"] = good.sign(transaction(args.bundle, args.product, "Production", original=original, expires_ms=now_ms + month))
    extra["subscription_renewed"] = good.sign(dict(transaction(args.bundle, args.product, "Production", original=original, expires_ms=now_ms + 2 * month),
                                                   transactionId=str(3000000000000000 + uuid.uuid4().int % 10**15)))
    # Notifications (App Store Server Notifications V2), about the purchases above.
    valid_payload = json.loads(base64.urlsafe_b64decode(cases[0]["jws"].split(".")[1] + "=="))
    later = now_ms + 3 * month
    renewed = good.sign(dict(transaction(args.bundle, args.product, "Production", original=original, expires_ms=later), transactionId=str(4000000000000000 + uuid.uuid4().int % 10**15)))
    early_original = str(2000000000000000 + uuid.uuid4().int % 10**15)
    early = good.sign(transaction(args.bundle, args.product, "Production", original=early_original))
    # EXPIRED names the last period paid for (the renewed one); a late one names an older period.
    ended = good.sign(dict(transaction(args.bundle, args.product, "Production", original=original, expires_ms=later), transactionId=str(5000000000000000 + uuid.uuid4().int % 10**15)))
    older = good.sign(transaction(args.bundle, args.product, "Production", original=original, expires_ms=now_ms - 1000))
    resubscribed = good.sign(dict(transaction(args.bundle, args.product, "Production", original=original, expires_ms=later + month), transactionId=str(6000000000000000 + uuid.uuid4().int % 10**15)))
    # Purchases exchanged first, then revoked (Family Sharing) or lapsed after a billing grace period.
    revokable = good.sign(transaction(args.bundle, args.product, "Production"))
    grace_original = str(2000000000000000 + uuid.uuid4().int % 10**15)
    grace = good.sign(transaction(args.bundle, args.product, "Production", original=grace_original, expires_ms=now_ms + month))
    grace_ended = good.sign(dict(transaction(args.bundle, args.product, "Production", original=grace_original, expires_ms=now_ms + month),
                                 transactionId=str(7000000000000000 + uuid.uuid4().int % 10**15)))
    extra["revokable"] = revokable
    extra["grace"] = grace
    # A notification Apple signed around a transaction nobody trusted: the outer JWS verifies, the inner one must not.
    foreign = Chain(root=other_root).sign(transaction(args.bundle, args.product, "Production"))
    notifications = {
        "revoke": notification(good, args.bundle, "REVOKE", revokable),
        "grace_expired": notification(good, args.bundle, "GRACE_PERIOD_EXPIRED", grace_ended),
        "leaf_without_marker": notification(Chain(root=(good.root_key, good.root), leaf_marker=False), args.bundle, "REFUND", cases[0]["jws"]),
        "intermediate_without_marker": notification(Chain(root=(good.root_key, good.root), intermediate_marker=False), args.bundle, "REFUND", cases[0]["jws"]),
        "expired_leaf": notification(expired_leaf, args.bundle, "REFUND", cases[0]["jws"]),
        "sandbox": notification(good, args.bundle, "REFUND", cases[0]["jws"], environment="Sandbox"),
        "foreign_transaction": notification(good, args.bundle, "REFUND", foreign),
        "did_renew": notification(good, args.bundle, "DID_RENEW", renewed),
        "refund_valid": notification(good, args.bundle, "REFUND", cases[0]["jws"]),
        "refund_early": notification(good, args.bundle, "REFUND", early),
        "expired": notification(good, args.bundle, "EXPIRED", ended, subtype="VOLUNTARY"),
        "resubscribed": notification(good, args.bundle, "SUBSCRIBED", resubscribed, subtype="RESUBSCRIBE"),
        "late_expired": notification(good, args.bundle, "EXPIRED", older, subtype="VOLUNTARY"),
        "refund_reversed": notification(good, args.bundle, "REFUND_REVERSED", cases[0]["jws"]),
        "other_app": notification(good, "com.other.app", "REFUND", cases[0]["jws"]),
        "tampered": notification(good, args.bundle, "REFUND", cases[0]["jws"])[:-8] + "AAAAAAAA",
        "wrong_root": notification(Chain(root=other_root), args.bundle, "REFUND", cases[0]["jws"]),
    }
    verdicts = {name: apple_notification_verdict(jws, root_der, args.bundle, "Production") for name, jws in notifications.items()}
    # Apple's library verifies a notification's nested transaction only when asked: its verdict on it.
    nested_verdicts = {"foreign_transaction": apple_verdict(foreign, root_der, args.bundle, "Production"), "did_renew": apple_verdict(renewed, root_der, args.bundle, "Production")}
    print(json.dumps({"cases": cases, "extra": extra, "notifications": notifications, "notification_verdicts": verdicts, "nested_verdicts": nested_verdicts,
                      "renewed_expires": later // 1000, "early": early, "valid_original": valid_payload["originalTransactionId"],
                      "subscription_original": original, "resubscribed_expires": (later + month) // 1000}))


if __name__ == "__main__":
    main()
