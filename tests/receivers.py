"""Real alert receivers for the tests, run as their own processes on 127.0.0.1 (started and stopped by
fixtures in conftest.py): every request or message received is appended as one JSON line to OUT.

    python tests/receivers.py http PORT OUT     an HTTP server answering 200 "ok" to every POST
    python tests/receivers.py smtp PORT OUT     an SMTP server (aiosmtpd) accepting every message
"""

from __future__ import annotations

import json
import sys
import threading
import time
from email import message_from_bytes, policy
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path

_lock = threading.Lock()


def _record(out: Path, entry: dict) -> None:
    with _lock, out.open("a", encoding="utf-8") as handle:
        handle.write(json.dumps({**entry, "received_at": time.time()}) + "\n")


def serve_http(port: int, out: Path) -> None:
    class Handler(BaseHTTPRequestHandler):
        def do_POST(self) -> None:
            body = self.rfile.read(int(self.headers.get("Content-Length") or 0)).decode("utf-8", "replace")
            _record(out, {"path": self.path, "headers": dict(self.headers), "body": body})
            self.send_response(200)
            self.send_header("Content-Type", "text/plain")
            self.end_headers()
            self.wfile.write(b"ok")

        def do_GET(self) -> None:  # readiness probe
            self.send_response(200)
            self.end_headers()

        def log_message(self, *args: object) -> None:
            pass

    ThreadingHTTPServer(("127.0.0.1", port), Handler).serve_forever()


def serve_smtp(port: int, out: Path) -> None:
    from aiosmtpd.controller import Controller

    class Handler:
        async def handle_DATA(self, server, session, envelope) -> str:
            message = message_from_bytes(envelope.content, policy=policy.default)
            body = message.get_body(preferencelist=("html", "plain"))
            _record(
                out,
                {
                    "from": envelope.mail_from,
                    "to": list(envelope.rcpt_tos),
                    "subject": str(message["subject"]),
                    "body": body.get_content() if body else "",
                },
            )
            return "250 OK"

    controller = Controller(Handler(), hostname="127.0.0.1", port=port)
    controller.start()
    threading.Event().wait()


if __name__ == "__main__":
    kind, port, out = sys.argv[1], int(sys.argv[2]), Path(sys.argv[3])
    out.touch()
    {"http": serve_http, "smtp": serve_smtp}[kind](port, out)
