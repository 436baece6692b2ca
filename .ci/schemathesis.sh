#!/usr/bin/env bash
# Contract test of openapi.yaml against a live `keylight serve`, with schemathesis.
#
#   .ci/schemathesis.sh path/to/keylight
#
# The caller installs schemathesis (pinned: python3 -m pip install "schemathesis==4.32.5"); this script
# only imports it. It starts the server on a free loopback port with a throwaway SQLite database and a
# known admin token, seeds a tenant, a product, key types and licenses through the admin API, then runs
# the examples, coverage, fuzzing and stateful (OpenAPI links) phases with every check. Exits non-zero on
# any failure; the server is always stopped. Bounded: the whole script gives up after about 11 minutes.
#
# Loopback only: the server's outbound calls are fenced off. Webhook deliveries are polled once a day
# (--webhook-poll-interval), so the endpoints schemathesis registers are never called, and Stripe's API
# base points at a fake Stripe on loopback started here.
#
# Environment (all optional):
#   SCHEMATHESIS_MAX_EXAMPLES  test cases per operation and phase (default 60)
#   SCHEMATHESIS_SEED          seed (default fixed, so runs are comparable; "random" for a fresh one)
#   SCHEMATHESIS_WORKERS       concurrent workers (default 2)
#   SCHEMATHESIS_REPORT_DIR    where to keep the reports (JUnit, NDJSON) and the server log (default: a temp dir, removed)
#   SCHEMATHESIS_TIMEOUT       seconds for the schemathesis run itself (default 600; the whole script gets 60 more)
#   SCHEMATHESIS_ALLOW_OTHER_VERSION=1  run with a schemathesis other than the pinned one
#   SCHEMATHESIS_EXTRA_ARGS    more `schemathesis run` options, split on spaces (e.g. "--exclude-checks unsupported_method")
set -euo pipefail

PINNED_VERSION="4.32.5"
ADMIN_TOKEN="kl_admin_schemathesis_ci_0123456789abcdef"
STRIPE_WEBHOOK_SECRET="whsec_schemathesis_ci"
STRIPE_SECRET_KEY="sk_test_schemathesis_ci"

if [ $# -ne 1 ] || [ ! -x "$1" ]; then
  echo "usage: $0 path/to/keylight   (an executable keylight binary)" >&2
  exit 2
fi
binary=$(cd "$(dirname "$1")" && pwd)/$(basename "$1")
root=$(cd "$(dirname "$0")/.." && pwd)
spec="$root/openapi.yaml"

# The whole script, bounded: re-run under `timeout` once (the server and helpers are children, killed by the trap).
if [ -z "${KEYLIGHT_SCHEMATHESIS_BOUNDED:-}" ]; then
  export KEYLIGHT_SCHEMATHESIS_BOUNDED=1
  exec timeout --kill-after=10 $(( ${SCHEMATHESIS_TIMEOUT:-600} + 60 )) bash "$0" "$@"
fi

echo "== schemathesis"
version=$(python3 -c 'import schemathesis; print(schemathesis.__version__)')
echo "schemathesis $version (pinned: $PINNED_VERSION)"
if [ "$version" != "$PINNED_VERSION" ] && [ "${SCHEMATHESIS_ALLOW_OTHER_VERSION:-}" != 1 ]; then
  echo "CI: install the pinned version: python3 -m pip install 'schemathesis==$PINNED_VERSION' (or set SCHEMATHESIS_ALLOW_OTHER_VERSION=1)" >&2
  exit 2
fi

work=$(mktemp -d /tmp/keylight-schemathesis.XXXXXX)
server_pid=""
stripe_pid=""
cleanup() {
  status=$?
  for pid in $server_pid $stripe_pid; do
    if kill -0 "$pid" 2>/dev/null; then
      kill -TERM "$pid" 2>/dev/null || true
      for _ in $(seq 50); do kill -0 "$pid" 2>/dev/null || break; sleep 0.1; done
      kill -KILL "$pid" 2>/dev/null || true
    fi
  done
  if [ -n "${SCHEMATHESIS_REPORT_DIR:-}" ]; then
    mkdir -p "$SCHEMATHESIS_REPORT_DIR"
    cp "$work/server.log" "$SCHEMATHESIS_REPORT_DIR/" 2>/dev/null || true
  elif [ "$status" != 0 ] && [ -f "$work/server.log" ]; then
    echo "== server log (last 40 lines)" >&2
    tail -n 40 "$work/server.log" >&2 || true
  fi
  rm -rf "$work"
  exit "$status"
}
trap cleanup EXIT
trap 'exit 143' TERM INT

free_port() { python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])'; }

# ---------------------------------------------------------------- fake Stripe (loopback)
cat > "$work/fake_stripe.py" <<'PY'
"""Answers POST /v1/checkout/sessions like Stripe's API, on loopback, so checkouts can succeed."""
import itertools, json, sys
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

counter = itertools.count(1)

class Handler(BaseHTTPRequestHandler):
    def do_POST(self):
        length = int(self.headers.get("Content-Length") or 0)
        self.rfile.read(length)
        if self.path == "/v1/checkout/sessions":
            session = f"cs_test_ci{next(counter):08d}"
            status, body = 200, {"id": session, "object": "checkout.session", "url": f"https://checkout.stripe.com/c/pay/{session}"}
        else:
            status, body = 404, {"error": {"message": "Unrecognized request URL."}}
        data = json.dumps(body).encode()
        self.send_response(status)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(data)))
        self.end_headers()
        self.wfile.write(data)

    def log_message(self, *args):
        pass

ThreadingHTTPServer(("127.0.0.1", int(sys.argv[1])), Handler).serve_forever()
PY
stripe_port=$(free_port)
python3 "$work/fake_stripe.py" "$stripe_port" &
stripe_pid=$!

# ---------------------------------------------------------------- server
port=$(free_port)
base="http://127.0.0.1:$port"
echo "== keylight serve on $base ($binary)"
env -u KEYLIGHT_DATABASE_URL -u KEYLIGHT_MASTER_KEY -u KEYLIGHT_PUBLIC_URL -u KEYLIGHT_TRUSTED_PROXIES -u KEYLIGHT_STRIPE_API_BASE \
  KEYLIGHT_ADMIN_TOKEN="$ADMIN_TOKEN" \
  "$binary" serve --webhook-allow-private --host 127.0.0.1 --port "$port" --db "$work/keylight.sqlite" \
    --rate-limit-address 0 --rate-limit-license 0 \
    --webhook-poll-interval 86400 --stripe-api-base "http://127.0.0.1:$stripe_port" \
    --log-level warning >"$work/server.log" 2>&1 &
server_pid=$!
healthy() { python3 -c 'import sys, urllib.request; urllib.request.urlopen(sys.argv[1] + "/healthz", timeout=2)' "$base" 2>/dev/null; }
for _ in $(seq 300); do
  if healthy; then break; fi
  if ! kill -0 "$server_pid" 2>/dev/null; then echo "CI: keylight serve --webhook-allow-private exited:" >&2; cat "$work/server.log" >&2; exit 1; fi
  sleep 0.1
done
healthy || { echo "CI: keylight serve --webhook-allow-private did not answer /healthz within 30 s" >&2; exit 1; }

# ---------------------------------------------------------------- seed
cat > "$work/seed.py" <<'PY'
"""Seeds what positive and stateful tests need, and prints the values the config binds (JSON)."""
MERCHANT_SECRETS = {"paddle": "pdl_ntfset_01schemathesis_ci", "lemonsqueezy": "lemon-schemathesis-ci", "polar": "whsec_schemathesisPolarCi0123456789"}
import json, os, sys, urllib.request

base, token = os.environ["KL_BASE"], os.environ["KL_ADMIN_TOKEN"]

def call(method, path, body=None, headers=None, expect=(200, 201)):
    data = None if body is None else json.dumps(body).encode()
    request = urllib.request.Request(base + path, data=data, method=method)
    request.add_header("Content-Type", "application/json")
    for name, value in (headers or {"Authorization": f"Bearer {token}"}).items():
        request.add_header(name, value)
    try:
        with urllib.request.urlopen(request, timeout=10) as response:
            status, text = response.status, response.read()
    except urllib.error.HTTPError as error:
        status, text = error.code, error.read()
    if status not in expect:
        sys.exit(f"seed: {method} {path} answered {status}: {text[:300]!r}")
    return json.loads(text)

call("POST", "/admin/v1/tenants", {"id": "acme", "name": "Acme Software"})
product = call("POST", "/admin/v1/tenants/acme/products",
               {"id": "app", "name": "Photo App", "key_prefix": "ACME", "trial_duration_days": 14, "free_tier_enabled": True})
kt = "/admin/v1/tenants/acme/products/app/key-types"
call("POST", kt, {"id": "pro", "display_name": "Pro", "activation_limit": 100000, "duration_days": None,
                  "fallback_access": True, "entitlements": ["pro", "export:raw"], "stripe_price_id": "price_ci_pro"})
call("POST", kt, {"id": "basic", "display_name": "Basic", "activation_limit": 100000, "duration_days": 365,
                  "fallback_access": False, "entitlements": [], "stripe_price_id": "price_ci_basic", "stripe_mode": "subscription"})
licenses = "/admin/v1/tenants/acme/products/app/licenses"
sdk = {"X-Keylight-SDK-Key": product["sdk_key"]}

def mint(body, action=None):
    license = call("POST", licenses, body)
    if action:
        call("POST", f"{licenses}/{license['id']}/{action}")
    return license

def activate(key, n):
    return call("POST", "/acme/app/activate", {"license_key": key, "instance_name": f"CI device {n}", "machine_hash": f"ci-machine-{n}"},
                headers=sdk)["instance_id"]

# For the SDK API (bound to its license_key and instance_id): licenses the admin dictionaries below never name,
# so that other test cases rarely remint or revoke them.
active = mint({"key_type_id": "pro", "customer_email": "ada@example.com"})          # active, lifetime
fallback = mint({"key_type_id": "pro", "expires_at": 1000})                          # expired, fallback access
expired = mint({"key_type_id": "basic", "expires_at": 1000})                         # expired, no fallback
revoked = mint({"key_type_id": "pro"}, "revoke")
suspended = mint({"key_type_id": "basic", "customer_email": "grace@example.com"}, "suspend")
# Instances that validate (and activate) name, and others that deactivate names, so that deactivation does not
# leave validate only inactive instances.
validate_instances = [activate(active["license_key"], n) for n in range(1, 4)] + [activate(fallback["license_key"], 4)]
deactivate_instances = [activate(active["license_key"], n) for n in range(5, 8)] + [activate(fallback["license_key"], 8)]
# The active license is named most often, so that validate and deactivate find its instances.
sdk_keys = [active["license_key"]] * 3 + [fallback["license_key"], expired["license_key"], revoked["license_key"], suspended["license_key"]]
# For the admin license routes (bound to their license id and instance id).
playground = [mint({"key_type_id": "pro"}), mint({"key_type_id": "basic", "customer_email": "linus@example.com"}), mint({"key_type_id": "pro"}, "suspend")]
admin_instances = [activate(playground[0]["license_key"], 9)]
# A bulk job that selects nothing (done at once), for the job route to find.
bulk_job = call("POST", f"{licenses}/bulk", {"filter": {"metadata": {"ci": "no-such-license"}}, "change": {"limit_add": 1}}, expect=(202,))
# A draft release, for artifact uploads to reach a release that takes files (nothing publishes it).
draft_release = call("POST", "/admin/v1/tenants/acme/products/app/releases", {"version": "1.0.0-ci", "short_version": "1.0 CI", "channel": "ci"})
call("PUT", "/admin/v1/tenants/acme/stripe", {"webhook_secret": os.environ["KL_STRIPE_WEBHOOK_SECRET"], "secret_key": os.environ["KL_STRIPE_SECRET_KEY"]})
# Merchants of record (their webhooks are signed by the hooks with these secrets).
for provider in ("paddle", "lemonsqueezy", "polar"):
    call("PUT", f"/admin/v1/tenants/acme/{provider}", {"webhook_secret": MERCHANT_SECRETS[provider]})
# Well-formed offline files for the seeded product (protocol 6.4): requests from a few machines, and
# proofs naming seeded instances (signed by no device key of theirs, so answered 422 INVALID_PROOF).
import base64
def armored(label, payload):
    return "-----BEGIN %s-----\n%s\n-----END %s-----\n" % (label, base64.b64encode(json.dumps(payload).encode()).decode(), label)
device_key = "b41iU/PtssfhZ7Dv2xXZmqvEV7l1bPA2FSlSQHFRqBQ="
offline_requests = [armored("KEYLIGHT ACTIVATION REQUEST", {"v": 1, "tenant_id": "acme", "product_id": "app", "machine_hash": "offline-%d" % n,
                    "instance_name": "Lab %d" % n, "device_key": device_key, "created_at": 1790000000}) for n in range(4)]
offline_proofs = [armored("KEYLIGHT DEACTIVATION", {"v": 1, "instance_id": instance, "issued_at": 1790000000,
                  "signature": base64.b64encode(bytes(64)).decode()}) for instance in deactivate_instances[:3]]
json.dump({"sdk_key": product["sdk_key"], "sdk_license_keys": sdk_keys,
           "offline_requests": offline_requests, "offline_proofs": offline_proofs,
           "validate_instance_ids": validate_instances, "deactivate_instance_ids": deactivate_instances,
           "admin_license_ids": [license["id"] for license in playground], "admin_instance_ids": admin_instances,
           "bulk_job_ids": [bulk_job["id"]], "draft_release_ids": [draft_release["id"]]}, sys.stdout)
PY
KL_BASE="$base" KL_ADMIN_TOKEN="$ADMIN_TOKEN" KL_STRIPE_WEBHOOK_SECRET="$STRIPE_WEBHOOK_SECRET" KL_STRIPE_SECRET_KEY="$STRIPE_SECRET_KEY" \
  python3 "$work/seed.py" >"$work/seed.json"
echo "seeded: tenant acme, product app (key types pro, basic), $(python3 -c 'import json,sys; d=json.load(open(sys.argv[1])); print(len(set(d["sdk_license_keys"])) + len(d["admin_license_ids"]), "licenses,", len(d["validate_instance_ids"] + d["deactivate_instance_ids"] + d["admin_instance_ids"]), "instances")' "$work/seed.json")"

# ---------------------------------------------------------------- configuration and hooks
python3 - "$work/seed.json" "$work/schemathesis.toml" "$ADMIN_TOKEN" "$work/hooks.py" <<'PY'
import json, sys
seed = json.load(open(sys.argv[1]))
toml = lambda values: "[" + ", ".join(json.dumps(v) for v in values) + "]"
def sdk_operation(operation_id, instances):
    return f"""[[operations]]
include-operation-id = "{operation_id}"
parameters = {{ "path.tenantId" = "acme", "path.productId" = "app", "body.license_key" = {{ dictionary = "sdk_license_keys", probability = 0.8 }}, "body.instance_id" = {{ dictionary = "{instances}", probability = 0.8 }} }}
checks.positive_data_acceptance.expected-statuses = ["2xx", 401, 403, 404, 409, 422, 429, "5xx"]
"""
open(sys.argv[2], "w").write(f"""
# Generated by .ci/schemathesis.sh.
hooks = {json.dumps(sys.argv[4])}

[cache]
# Nothing is left in the caller's working directory.
enabled = false

# A schema-violating body over 64 KiB is refused as too large before it is read.
[checks.negative_data_rejection]
expected-statuses = [400, 401, 403, 404, 405, 406, 409, 413, 415, 422, 428, 429, "5xx"]

[auth.openapi.adminToken]
bearer = {json.dumps(sys.argv[3])}
[auth.openapi.sdkKey]
api_key = {json.dumps(seed["sdk_key"])}
[auth.openapi.checkoutKey]
# Replaced by a fresh key of the request's tenant in the before_call hook (admin calls may rotate it).
bearer = "kl_checkout_placeholder"

[dictionaries]
sdk_license_keys = {{ values = {toml(seed["sdk_license_keys"])} }}
validate_instance_ids = {{ values = {toml(seed["validate_instance_ids"])} }}
deactivate_instance_ids = {{ values = {toml(seed["deactivate_instance_ids"])} }}
admin_license_ids = {{ values = {toml(seed["admin_license_ids"])} }}
admin_instance_ids = {{ values = {toml(seed["admin_instance_ids"])} }}
bulk_job_ids = {{ values = {toml(seed["bulk_job_ids"])} }}
draft_release_ids = {{ values = {toml(seed["draft_release_ids"])} }}
offline_requests = {{ values = {toml(seed["offline_requests"])} }}
offline_proofs = {{ values = {toml(seed["offline_proofs"])} }}
product_ids = {{ values = ["app"] }}
key_type_ids = {{ values = ["pro", "basic"] }}

# The SDK API of the seeded product, with its licenses and instances most of the time. 409 (all slots in use) is
# accepted from valid requests by default; 422 is the same kind of answer (the license's or instance's state, e.g.
# revoked or deactivated by another test case), not a refusal of the request's shape.
{sdk_operation("sdkActivate", "validate_instance_ids")}
{sdk_operation("sdkValidate", "validate_instance_ids")}
{sdk_operation("sdkDeactivate", "deactivate_instance_ids")}
[[operations]]
include-operation-id = "sdkInstances"
parameters = {{ "path.tenantId" = "acme", "path.productId" = "app", "body.license_key" = {{ dictionary = "sdk_license_keys", probability = 0.8 }} }}
checks.positive_data_acceptance.expected-statuses = ["2xx", 401, 403, 404, 409, 422, 429, "5xx"]

# Offline files (protocol 6.4) are base64 of JSON between armor lines: JSON Schema cannot describe their
# content, so a schema-valid string may still be a malformed file, which is 400 naming what is wrong.
# The seeded files reach the real paths (a response, a full license's 409, a proof's 422).
[[operations]]
include-operation-id = "sdkOfflineActivate"
parameters = {{ "path.tenantId" = "acme", "path.productId" = "app", "body.license_key" = {{ dictionary = "sdk_license_keys", probability = 0.8 }}, "body.request" = {{ dictionary = "offline_requests", probability = 0.8 }} }}
checks.positive_data_acceptance.expected-statuses = ["2xx", 400, 401, 403, 404, 409, 422, 429, "5xx"]
[[operations]]
include-operation-id = "sdkOfflineDeactivate"
parameters = {{ "path.tenantId" = "acme", "path.productId" = "app", "body.license_key" = {{ dictionary = "sdk_license_keys", probability = 0.8 }}, "body.proof" = {{ dictionary = "offline_proofs", probability = 0.8 }} }}
checks.positive_data_acceptance.expected-statuses = ["2xx", 400, 401, 403, 404, 409, 422, 429, "5xx"]

# App Store: a schema-valid signed_transaction is still not one Apple signed (no schema can say so): 422.
[[operations]]
include-operation-id = "sdkAppStoreActivate"
parameters = {{ "path.tenantId" = "acme", "path.productId" = "app" }}
checks.positive_data_acceptance.expected-statuses = ["2xx", 401, 403, 404, 409, 422, 429, "5xx"]
[[operations]]
include-operation-id = "appStoreNotifications"
parameters = {{ "path.tenantId" = "acme" }}
checks.positive_data_acceptance.expected-statuses = ["2xx", 401, 403, 404, 409, 422, 429, "5xx"]

# Lost key (protocol 6.9) is there whenever the server sends mail; this one runs without --smtp-url, so a valid
# request is 422 MAIL_NOT_CONFIGURED (checked before the body, so any body gets it), and nothing is queued.
[[operations]]
include-operation-id = "sdkLostKey"
parameters = {{ "path.tenantId" = "acme", "path.productId" = "app" }}
checks.positive_data_acceptance.expected-statuses = ["2xx", 401, 403, 404, 422, 429, "5xx"]

[[operations]]
include-operation-id = ["sdkKeyless", "sdkConfig", "tenantKeyset"]
parameters = {{ "path.tenantId" = "acme", "path.productId" = "app" }}

[[operations]]
include-operation-id = "createCheckout"
parameters = {{ "path.tenantId" = "acme", "body.product_id" = {{ dictionary = "product_ids", probability = 0.6 }}, "body.key_type_id" = {{ dictionary = "key_type_ids", probability = 0.6 }} }}

# Mail: this server runs without --smtp-url, so a valid send_email or resend is 422 MAIL_NOT_CONFIGURED; and
# send_email without customer_email is a 400 no schema can express (it depends on another field).
[[operations]]
include-operation-id = "createLicense"
parameters = {{ "path.tenant" = "acme", "path.product" = "app", "body.key_type_id" = {{ dictionary = "key_type_ids", probability = 0.6 }} }}
checks.positive_data_acceptance.expected-statuses = ["2xx", 400, 401, 403, 404, 409, 422, 429, "5xx"]
[[operations]]
include-operation-id = "resendLicenseEmail"
parameters = {{ "path.tenant" = "acme", "path.product" = "app", "path.id" = {{ dictionary = "admin_license_ids", probability = 0.8 }} }}
checks.positive_data_acceptance.expected-statuses = ["2xx", 400, 401, 403, 404, 409, 422, 429, "5xx"]

# Mail settings: a template that does not parse, or a reply_to that is not an address, is a 400 no schema can
# express (Mustache's grammar, an address's); two templates of 32 Ki characters each can pass the 64 KiB body
# limit together (413), which no per-field schema can say either.
[[operations]]
include-operation-id = ["setMailSettings", "previewMail"]
parameters = {{ "path.tenant" = "acme" }}
checks.positive_data_acceptance.expected-statuses = ["2xx", 400, 401, 403, 404, 409, 413, 422, 429, "5xx"]

# Reminders: this server runs without --smtp-url, so a valid "mail_buyers": true is 422 MAIL_NOT_CONFIGURED.
[[operations]]
include-operation-id = "setReminderSettings"
parameters = {{ "path.tenant" = "acme" }}
checks.positive_data_acceptance.expected-statuses = ["2xx", 401, 403, 404, 409, 422, 429, "5xx"]

# Insights: `from` after `to`, more than 366 days between them, or a date that does not exist (February 30th)
# is a 400 no schema can express (it depends on two parameters, or on the calendar).
[[operations]]
include-operation-id = ["getInsights", "getInsightsCsv"]
parameters = {{ "path.tenant" = "acme", "path.product" = "app" }}
checks.positive_data_acceptance.expected-statuses = ["2xx", 400, 401, 403, 404, 409, 422, 429, "5xx"]

# Bulk changes of the seeded product: a change that does not fit is counted per license, not refused, but
# `change.key_type_id` naming a key type the product lacks is 422, and a code in both entitlement lists 400 (no
# schema can say either: the first is another resource, the second a relation between two lists).
[[operations]]
include-operation-id = "bulkChangeLicenses"
parameters = {{ "path.tenant" = "acme", "path.product" = "app" }}
checks.positive_data_acceptance.expected-statuses = ["2xx", 400, 401, 403, 404, 409, 422, 429, "5xx"]
[[operations]]
include-operation-id = "getBulkJob"
parameters = {{ "path.tenant" = "acme", "path.product" = "app", "path.job" = {{ dictionary = "bulk_job_ids", probability = 0.8 }} }}

# Key type offers: an upgrade `to` the key type itself, or one price named twice, is 400; a `to` the product lacks
# 422; a price that already buys something in the tenant (a key type's own, another key type's offer) 409.
[[operations]]
include-operation-id = ["setKeyTypeOffers", "getKeyTypeOffers"]
parameters = {{ "path.tenant" = "acme", "path.product" = "app", "path.keyType" = {{ dictionary = "key_type_ids", probability = 0.8 }} }}
checks.positive_data_acceptance.expected-statuses = ["2xx", 400, 401, 403, 404, 409, 422, 429, "5xx"]

# Releases: `released_at` later than a year from now, `notes_markdown` over 32 KiB in bytes (the schema counts
# characters), or a `short_version` of blanks or control characters is a 400 no schema can express (it depends on
# the clock, on the encoding, or on Unicode categories); a version already in the channel is 409; 32 Ki characters
# of notes can pass the 64 KiB body limit (413).
[[operations]]
include-operation-id = ["createRelease", "listReleases", "getRelease", "publishRelease", "yankRelease"]
parameters = {{ "path.tenant" = "acme", "path.product" = "app" }}
checks.positive_data_acceptance.expected-statuses = ["2xx", 400, 401, 403, 404, 409, 413, 422, 429, "5xx"]

# Artifact uploads, mostly into the seeded draft: a file's kind is told by its bytes, so a body of random bytes is a
# 400 no schema can express (no known kind, a `filename` without a known extension or naming another kind, a darwin
# file Sparkle cannot install), and so is a `signature` of the right shape that does not verify (BAD_SIGNATURE).
[[operations]]
include-operation-id = "uploadArtifact"
parameters = {{ "path.tenant" = "acme", "path.product" = "app", "path.id" = {{ dictionary = "draft_release_ids", probability = 0.8 }} }}
checks.positive_data_acceptance.expected-statuses = ["2xx", 400, 401, 403, 404, 409, 413, 422, 429, "5xx"]

# The update routes (appcast, updates/latest, downloads) of the seeded product, whose feed is not public: without a
# lease they answer 401, and a generated X-Keylight-Lease is never a lease the tenant signed (401 INVALID_LEASE).
[[operations]]
include-operation-id = ["appcast", "latestUpdate", "downloadArtifact"]
parameters = {{ "path.tenantId" = "acme", "path.productId" = "app" }}

# Merchant webhooks, signed by the hooks below: an event name (Paddle's `event_type`, Lemon Squeezy's
# `meta.event_name`, Polar's `type`) or Paddle's `event_id` over 255 UTF-8 bytes is "Not a … event" (400); the
# schema's maxLength counts characters, and up to 255 of them outside the BMP are 1,020 bytes (a clean-clone run
# met one in the stateful phase).
[[operations]]
include-operation-id = ["paddleWebhook", "lemonSqueezyWebhook", "polarWebhook"]
checks.positive_data_acceptance.expected-statuses = ["2xx", 400, 401, 403, 404, 409, 429, "5xx"]

# Tokens: `expires_at` in the past, `product_id` without `tenant_id`, or a one-tenant token holding a
# server-wide permission is a 400 no schema can express (it depends on the clock or on another field).
[[operations]]
include-operation-id = "createToken"
parameters = {{ "body.tenant_id" = "acme" }}
checks.positive_data_acceptance.expected-statuses = ["2xx", 400, 401, 403, 404, 409, 422, 429, "5xx"]

# The admin license routes, with the licenses and the instance seeded for them (first matching entry applies).
[[operations]]
include-operation-id = "deactivateInstance"
parameters = {{ "path.tenant" = "acme", "path.product" = "app", "path.id" = {{ dictionary = "admin_license_ids", probability = 0.8 }}, "path.instance" = {{ dictionary = "admin_instance_ids", probability = 0.8 }} }}

[[operations]]
include-operation-id = "updateLicense"
parameters = {{ "path.tenant" = "acme", "path.product" = "app", "path.id" = {{ dictionary = "admin_license_ids", probability = 0.8 }}, "body.key_type_id" = {{ dictionary = "key_type_ids", probability = 0.6 }} }}
checks.positive_data_acceptance.expected-statuses = ["2xx", 400, 401, 403, 404, 409, 422, 429, "5xx"]
[[operations]]
include-operation-id = "renewLicense"
parameters = {{ "path.tenant" = "acme", "path.product" = "app", "path.id" = {{ dictionary = "admin_license_ids", probability = 0.8 }} }}
checks.positive_data_acceptance.expected-statuses = ["2xx", 401, 403, 404, 409, 422, 429, "5xx"]

[[operations]]
include-path-regex = "^/admin/v1/tenants/\\\\{{tenant\\\\}}/products/\\\\{{product\\\\}}/licenses/\\\\{{id\\\\}}"
parameters = {{ "path.id" = {{ dictionary = "admin_license_ids", probability = 0.6 }} }}
""")
PY

cat > "$work/hooks.py" <<'PY'
"""Signs Stripe's and the merchants' webhook test cases and gives checkout test cases a valid checkout key."""
import base64, hashlib, hmac, json, os, time
from urllib.parse import quote

import requests
import schemathesis

BASE = os.environ["KL_BASE"]
ADMIN = {"Authorization": "Bearer " + os.environ["KL_ADMIN_TOKEN"]}
WEBHOOK_SECRET = os.environ["KL_STRIPE_WEBHOOK_SECRET"]
SECRET_KEY = os.environ["KL_STRIPE_SECRET_KEY"]
PLACEHOLDER = "Bearer kl_checkout_placeholder"
PRODUCT_PREFIX = "ACME"  # the seeded product's key_prefix
session = requests.Session()
MERCHANT_SECRETS = {"paddle": "pdl_ntfset_01schemathesis_ci", "lemonsqueezy": "lemon-schemathesis-ci", "polar": "whsec_schemathesisPolarCi0123456789"}
# The header each merchant signs in; a case without it stays unsigned.
MERCHANT_HEADERS = {"paddle": "Paddle-Signature", "lemonsqueezy": "X-Signature", "polar": "webhook-signature"}


def raw_body(case):
    body = case.body
    if isinstance(body, (bytes, bytearray)):
        return bytes(body)
    if body is None or type(body).__name__ == "NotSet":
        return b""
    return json.dumps(body).encode()


def sign_merchant(provider, case, headers, kwargs):
    """Signs a merchant webhook case as its provider does, with the tenant's secret (re)set to a known one."""
    secret = MERCHANT_SECRETS[provider]
    tenant = case.path_parameters.get("tenantId")
    session.put(f"{BASE}/admin/v1/tenants/{tenant_path(tenant)}/{provider}", headers=ADMIN, json={"webhook_secret": secret}, timeout=10)
    raw = raw_body(case)
    kwargs["data"] = raw
    now = str(int(time.time()))
    if provider == "paddle":
        headers["Paddle-Signature"] = f"ts={now};h1=" + hmac.new(secret.encode(), now.encode() + b":" + raw, hashlib.sha256).hexdigest()
    elif provider == "lemonsqueezy":
        headers["X-Signature"] = hmac.new(secret.encode(), raw, hashlib.sha256).hexdigest()
    else:
        delivery = str(headers.get("webhook-id") or "ci-delivery")
        headers["webhook-timestamp"] = now
        digest = hmac.new(secret.encode(), delivery.encode() + b"." + now.encode() + b"." + raw, hashlib.sha256).digest()
        headers["webhook-signature"] = "v1," + base64.b64encode(digest).decode()


def tenant_path(value):
    return quote(str(value), safe="")


@schemathesis.hook
def before_call(context, case, kwargs):
    path = case.operation.path
    headers = case.headers if case.headers is not None else {}
    provider = path.split("/")[1] if path.endswith("/webhook/{tenantId}") else None
    # Polar signs three headers: a case missing any of them stays as generated (its 400 is the point).
    complete = provider != "polar" or all(name in headers for name in ("webhook-id", "webhook-timestamp"))
    if provider in MERCHANT_HEADERS and case.method.upper() == "POST" and MERCHANT_HEADERS[provider] in headers and complete:
        sign_merchant(provider, case, headers, kwargs)
    elif path == "/stripe/webhook/{tenantId}" and case.method.upper() == "POST" and "Stripe-Signature" in headers:
        # A signature that matches the body: the tenant's webhook secret is (re)set to a known one first,
        # since other test cases may change it. A case without the header stays unsigned.
        tenant = case.path_parameters.get("tenantId")
        session.put(f"{BASE}/admin/v1/tenants/{tenant_path(tenant)}/stripe", headers=ADMIN,
                    json={"webhook_secret": WEBHOOK_SECRET, "secret_key": SECRET_KEY}, timeout=10)
        body = case.body
        if isinstance(body, (bytes, bytearray)):
            raw = bytes(body)
        elif body is None or type(body).__name__ == "NotSet":
            raw = b""
        else:
            raw = json.dumps(body).encode()
        kwargs["data"] = raw
        timestamp = str(int(time.time()))
        digest = hmac.new(WEBHOOK_SECRET.encode(), timestamp.encode() + b"." + raw, hashlib.sha256).hexdigest()
        headers["Stripe-Signature"] = f"t={timestamp},v1={digest}"
    elif (path == "/admin/v1/tenants/{tenant}/products/{product}/licenses" and case.method.upper() == "POST"
          and case.meta is not None and case.meta.generation.mode.name == "POSITIVE"
          and isinstance(case.body, dict) and isinstance(case.body.get("license_key"), str)):
        # An imported key must start with its product's key_prefix, which no schema can state (it is another
        # resource's field). Valid cases get the seeded product's prefix, so that they reach the import itself.
        key = case.body["license_key"].strip().upper()
        if not key.startswith(PRODUCT_PREFIX):
            case.body["license_key"] = (PRODUCT_PREFIX + "-" + key)[:64]
    elif path == "/api/{tenantId}/checkout" and case.method.upper() == "POST" and headers.get("Authorization") == PLACEHOLDER:
        tenant = case.path_parameters.get("tenantId")
        answer = session.post(f"{BASE}/admin/v1/tenants/{tenant_path(tenant)}/checkout-key", headers=ADMIN, timeout=10)
        if answer.status_code == 201:
            headers["Authorization"] = "Bearer " + answer.json()["checkout_key"]
PY

# ---------------------------------------------------------------- run
examples=${SCHEMATHESIS_MAX_EXAMPLES:-60}
seed=${SCHEMATHESIS_SEED:-20261122}
workers=${SCHEMATHESIS_WORKERS:-2}
reports=${SCHEMATHESIS_REPORT_DIR:-$work/reports}
seed_args=(--seed "$seed")
[ "$seed" = random ] && seed_args=()
command=(python3 -m schemathesis.cli --config-file "$work/schemathesis.toml" run "$spec" --url "$base"
  --phases examples,coverage,fuzzing,stateful --checks all --max-examples "$examples" "${seed_args[@]}"
  --workers "$workers" --continue-on-failure --request-timeout 10 --no-color
  --output-sanitize false --report junit,ndjson --report-dir "$reports")
# shellcheck disable=SC2206
[ -n "${SCHEMATHESIS_EXTRA_ARGS:-}" ] && command+=(${SCHEMATHESIS_EXTRA_ARGS})
echo "== ${command[*]}"
set +e
KL_BASE="$base" KL_ADMIN_TOKEN="$ADMIN_TOKEN" KL_STRIPE_WEBHOOK_SECRET="$STRIPE_WEBHOOK_SECRET" KL_STRIPE_SECRET_KEY="$STRIPE_SECRET_KEY" \
  timeout --kill-after=10 "${SCHEMATHESIS_TIMEOUT:-600}" "${command[@]}"
status=$?
set -e
if [ "$status" = 124 ] || [ "$status" = 137 ]; then
  echo "CI: schemathesis did not finish within ${SCHEMATHESIS_TIMEOUT:-600} s" >&2
fi
if ! kill -0 "$server_pid" 2>/dev/null; then
  echo "CI: keylight serve --webhook-allow-private died during the run" >&2
  status=1
fi
exit "$status"
