"""A real SMTP server for the mail tests: aiosmtpd (from PyPI) on loopback, AUTH required,
STARTTLS with a certificate made here, every accepted message written to a folder.

    python3 smtp_server.py --folder DIR --user U --password P [--port 0] [--starttls] [--reject-rcpt ADDR]

Prints "ready PORT [CA-FILE]" once listening; runs until terminated. Each message is written as
DIR/NNNN.eml (the raw DATA) with DIR/NNNN.json (envelope, auth user) beside it. With --reject-rcpt
a RCPT TO that address is answered 550 (a final refusal); with --tempfail-file, while that file
exists every RCPT is answered 451 (try again later). With --auth-only MECH the server offers
only that AUTH mechanism (LOGIN, say); the envelope records which one the client used."""
import argparse, asyncio, datetime, json, os, signal, ssl, sys, tempfile, threading

from aiosmtpd.controller import Controller
from aiosmtpd.smtp import AuthResult, LoginPassword

parser = argparse.ArgumentParser()
parser.add_argument("--folder", required=True)
parser.add_argument("--user", required=True)
parser.add_argument("--password", required=True)
parser.add_argument("--port", type=int, default=0)
parser.add_argument("--starttls", action="store_true")
parser.add_argument("--reject-rcpt")
parser.add_argument("--tempfail-file")
parser.add_argument("--auth-only", choices=["PLAIN", "LOGIN"])
args = parser.parse_args()
os.makedirs(args.folder, exist_ok=True)
count = [len([n for n in os.listdir(args.folder) if n.endswith(".eml")])]
lock = threading.Lock()


def make_certificate():
    from cryptography import x509
    from cryptography.hazmat.primitives import hashes, serialization
    from cryptography.hazmat.primitives.asymmetric import ec
    from cryptography.x509.oid import NameOID
    folder = tempfile.mkdtemp(prefix="keylight-smtp-tls-")
    ca_key = ec.generate_private_key(ec.SECP256R1())
    ca_name = x509.Name([x509.NameAttribute(NameOID.COMMON_NAME, "Keylight test CA")])
    now = datetime.datetime.now(datetime.timezone.utc)
    ca = (x509.CertificateBuilder().subject_name(ca_name).issuer_name(ca_name).public_key(ca_key.public_key())
          .serial_number(x509.random_serial_number()).not_valid_before(now - datetime.timedelta(days=1))
          .not_valid_after(now + datetime.timedelta(days=2))
          .add_extension(x509.BasicConstraints(ca=True, path_length=None), critical=True)
          .sign(ca_key, hashes.SHA256()))
    key = ec.generate_private_key(ec.SECP256R1())
    cert = (x509.CertificateBuilder().subject_name(x509.Name([x509.NameAttribute(NameOID.COMMON_NAME, "localhost")]))
            .issuer_name(ca_name).public_key(key.public_key()).serial_number(x509.random_serial_number())
            .not_valid_before(now - datetime.timedelta(days=1)).not_valid_after(now + datetime.timedelta(days=2))
            .add_extension(x509.SubjectAlternativeName([x509.DNSName("localhost")]), critical=False)
            .sign(ca_key, hashes.SHA256()))
    paths = {name: os.path.join(folder, name) for name in ("ca.pem", "cert.pem", "key.pem")}
    with open(paths["ca.pem"], "wb") as f:
        f.write(ca.public_bytes(serialization.Encoding.PEM))
    with open(paths["cert.pem"], "wb") as f:
        f.write(cert.public_bytes(serialization.Encoding.PEM))
    with open(paths["key.pem"], "wb") as f:
        f.write(key.private_bytes(serialization.Encoding.PEM, serialization.PrivateFormat.PKCS8, serialization.NoEncryption()))
    return paths


class Authenticator:
    def __call__(self, server, session, envelope, mechanism, auth_data):
        ok = isinstance(auth_data, LoginPassword) and auth_data.login.decode() == args.user and auth_data.password.decode() == args.password
        session.keylight_mechanism = mechanism
        return AuthResult(success=ok, handled=False)


class Handler:
    async def handle_RCPT(self, server, session, envelope, address, rcpt_options):
        if args.tempfail_file and os.path.exists(args.tempfail_file):
            return "451 4.3.0 try again later"
        if args.reject_rcpt and address == args.reject_rcpt:
            return "550 5.1.1 no such mailbox"
        envelope.rcpt_tos.append(address)
        return "250 OK"

    async def handle_DATA(self, server, session, envelope):
        with lock:
            count[0] += 1
            name = os.path.join(args.folder, "%04d" % count[0])
        with open(name + ".json", "w") as f:
            json.dump({"mail_from": envelope.mail_from, "rcpt_tos": envelope.rcpt_tos,
                       "authenticated": session.authenticated, "tls": session.ssl is not None,
                       "mechanism": getattr(session, "keylight_mechanism", None)}, f)
        # The .eml last: a reader that sees it sees the envelope too.
        with open(name + ".eml.tmp", "wb") as f:
            f.write(envelope.original_content)
        os.rename(name + ".eml.tmp", name + ".eml")
        return "250 Message accepted for delivery"


tls = None
ca_path = ""
if args.starttls:
    paths = make_certificate()
    tls = ssl.create_default_context(ssl.Purpose.CLIENT_AUTH)
    tls.load_cert_chain(paths["cert.pem"], paths["key.pem"])
    ca_path = paths["ca.pem"]

port = args.port
if not port:
    # aiosmtpd's Controller cannot report a port the system chose: take a free one first.
    import socket
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        port = probe.getsockname()[1]
controller = Controller(Handler(), hostname="127.0.0.1", port=port, authenticator=Authenticator(),
                        auth_required=True, auth_require_tls=bool(args.starttls), require_starttls=bool(args.starttls),
                        tls_context=tls, decode_data=False,
                        auth_exclude_mechanism=[m for m in ("PLAIN", "LOGIN") if args.auth_only and m != args.auth_only])
controller.start()
print("ready %d %s" % (controller.port, ca_path), flush=True)
stop = threading.Event()
signal.signal(signal.SIGTERM, lambda *_: stop.set())
signal.signal(signal.SIGINT, lambda *_: stop.set())
# A test process that ends without stopping us (a failed expectation, a crash) must not leave us
# running: when the parent is gone, so are we.
parent = os.getppid()
while not stop.wait(1):
    if os.getppid() != parent:
        break
# aiosmtpd's stop can hang on a connection left open; it gets 3 seconds.
threading.Timer(3, lambda: os._exit(0)).start()
controller.stop()
os._exit(0)
