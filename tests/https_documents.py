"""A real HTTPS server on loopback that serves client metadata documents, with a test CA the platform can trust.

The certificate authority and the server certificate (for 127.0.0.1 and localhost) are made fresh with
``cryptography``; the CA file goes to ``MCP_PLATFORM["CIMD_CA_BUNDLE"]`` and loopback to
``CIMD_ALLOWED_NETWORKS``, which is how tests and local development let the fetcher reach this server.
"""

from __future__ import annotations

import datetime
import ipaddress
import json
import ssl
import threading
import time
from collections import Counter
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any

from cryptography import x509
from cryptography.hazmat.primitives import hashes, serialization
from cryptography.hazmat.primitives.asymmetric import ec
from cryptography.x509.oid import NameOID


@dataclass
class Reply:
    """What the server answers at one path."""

    body: bytes
    status: int = 200
    headers: dict[str, str] = field(default_factory=lambda: {"Content-Type": "application/json"})
    # Seconds between bytes of the body (0: all at once): a server that drips its answer.
    drip: float = 0.0


def _name(common_name: str) -> x509.Name:
    return x509.Name([x509.NameAttribute(NameOID.COMMON_NAME, common_name)])


def _pem(key: ec.EllipticCurvePrivateKey) -> bytes:
    return key.private_bytes(
        serialization.Encoding.PEM, serialization.PrivateFormat.PKCS8, serialization.NoEncryption()
    )


def make_test_pki(directory: Path) -> tuple[Path, Path, Path]:
    """A CA and a server certificate for 127.0.0.1 and localhost; returns (ca.pem, server.pem, server.key)."""
    now = datetime.datetime.now(datetime.UTC)
    ca_key = ec.generate_private_key(ec.SECP256R1())
    ca = (
        x509.CertificateBuilder()
        .subject_name(_name("MCP platform test CA"))
        .issuer_name(_name("MCP platform test CA"))
        .public_key(ca_key.public_key())
        .serial_number(x509.random_serial_number())
        .not_valid_before(now - datetime.timedelta(minutes=5))
        .not_valid_after(now + datetime.timedelta(days=1))
        .add_extension(x509.BasicConstraints(ca=True, path_length=0), critical=True)
        .add_extension(x509.KeyUsage(False, False, False, False, False, True, True, False, False), critical=True)
        .add_extension(x509.SubjectKeyIdentifier.from_public_key(ca_key.public_key()), critical=False)
        .sign(ca_key, hashes.SHA256())
    )
    server_key = ec.generate_private_key(ec.SECP256R1())
    server = (
        x509.CertificateBuilder()
        .subject_name(_name("127.0.0.1"))
        .issuer_name(ca.subject)
        .public_key(server_key.public_key())
        .serial_number(x509.random_serial_number())
        .not_valid_before(now - datetime.timedelta(minutes=5))
        .not_valid_after(now + datetime.timedelta(days=1))
        .add_extension(
            x509.SubjectAlternativeName([x509.DNSName("localhost"), x509.IPAddress(ipaddress.ip_address("127.0.0.1"))]),
            critical=False,
        )
        .add_extension(x509.ExtendedKeyUsage([x509.oid.ExtendedKeyUsageOID.SERVER_AUTH]), critical=False)
        .add_extension(
            x509.AuthorityKeyIdentifier.from_issuer_public_key(ca_key.public_key()),
            critical=False,
        )
        .sign(ca_key, hashes.SHA256())
    )
    directory.mkdir(parents=True, exist_ok=True)
    ca_path, cert_path, key_path = directory / "ca.pem", directory / "server.pem", directory / "server.key"
    ca_path.write_bytes(ca.public_bytes(serialization.Encoding.PEM))
    cert_path.write_bytes(server.public_bytes(serialization.Encoding.PEM))
    key_path.write_bytes(_pem(server_key))
    return ca_path, cert_path, key_path


class DocumentServer:
    """Serves ``replies`` by path over HTTPS on 127.0.0.1 (ephemeral port) and counts the requests per path."""

    def __init__(self, cert: Path, key: Path) -> None:
        self.replies: dict[str, Reply] = {}
        self.hits: Counter[str] = Counter()
        server = self

        class Handler(BaseHTTPRequestHandler):
            def do_GET(self) -> None:
                server.hits[self.path] += 1
                reply = server.replies.get(self.path, Reply(b'{"error": "not found"}', status=404))
                self.send_response(reply.status)
                for name, value in reply.headers.items():
                    self.send_header(name, value)
                self.send_header("Content-Length", str(len(reply.body)))
                self.end_headers()
                if not reply.drip:
                    self.wfile.write(reply.body)
                    return
                for index in range(len(reply.body)):
                    try:
                        self.wfile.write(reply.body[index : index + 1])
                        self.wfile.flush()
                    except OSError:
                        return  # the client gave up
                    time.sleep(reply.drip)

            def log_message(self, format: str, *args: Any) -> None:
                pass

        self._httpd = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        context = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
        context.load_cert_chain(cert, key)
        self._httpd.socket = context.wrap_socket(self._httpd.socket, server_side=True)
        self.port = int(self._httpd.server_address[1])
        self._thread = threading.Thread(target=self._httpd.serve_forever, daemon=True)

    def __enter__(self) -> DocumentServer:
        self._thread.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self._httpd.shutdown()
        self._httpd.server_close()
        self._thread.join(timeout=10)

    def url(self, path: str, host: str = "127.0.0.1") -> str:
        return f"https://{host}:{self.port}{path}"

    def publish(self, path: str, document: dict[str, Any], **headers: str) -> str:
        """Serve ``document`` as JSON at ``path``; returns its URL."""
        self.replies[path] = Reply(
            json.dumps(document).encode(), headers={"Content-Type": "application/json", **headers}
        )
        return self.url(path)

    def client_document(self, path: str, redirect_uris: list[str], **extra: Any) -> str:
        """Publish a valid client metadata document naming its own URL; returns the URL (the client_id)."""
        url = self.url(path)
        document = {
            "client_id": url,
            "client_name": "Metadata document client",
            "redirect_uris": redirect_uris,
            "grant_types": ["authorization_code", "refresh_token"],
            "response_types": ["code"],
            "token_endpoint_auth_method": "none",
            **extra,
        }
        self.publish(path, document)
        return url
