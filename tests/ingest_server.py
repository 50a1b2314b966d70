# SPDX-License-Identifier: MIT
"""A stand-in for Grafana Pyroscope's POST /ingest, as its server API documents it, for the
export tests: parses each request's query and multipart form with Python's own parsers and
keeps what came in DIR: N.query (the query string), N.headers, N.profile (the form's
`profile` part), N.config (its `sample_type_config` part). Answers 200, or 400 naming what
is missing. Writes its port to DIR/port once listening.
With CERT and KEY (PEM files), it serves HTTPS.
Usage: python3 ingest_server.py DIR [CERT KEY]"""
import email.parser
import email.policy
import http.server
import os
import ssl
import sys
import urllib.parse

OUT = sys.argv[1]
count = 0


class Ingest(http.server.BaseHTTPRequestHandler):
    def log_message(self, *args):
        pass

    def answer(self, code, text):
        body = text.encode()
        self.send_response(code)
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)

    def do_POST(self):
        global count
        url = urllib.parse.urlsplit(self.path)
        body = self.rfile.read(int(self.headers.get("Content-Length", "0")))
        if url.path != "/ingest":
            return self.answer(404, "no such path")
        q = urllib.parse.parse_qs(url.query)
        for need in ("name", "from", "until"):
            if need not in q:
                return self.answer(400, "missing " + need)
        ctype = self.headers.get("Content-Type", "")
        if not ctype.startswith("multipart/form-data"):
            return self.answer(400, "not multipart/form-data: " + ctype)
        msg = email.parser.BytesParser(policy=email.policy.default).parsebytes(
            b"Content-Type: " + ctype.encode() + b"\r\n\r\n" + body)
        parts = {}
        for part in msg.iter_parts():
            parts[part.get_param("name", header="content-disposition")] = part.get_content()
        if "profile" not in parts:
            return self.answer(400, "no profile part")
        count += 1
        base = os.path.join(OUT, str(count))
        with open(base + ".query", "w") as f:
            f.write(url.query + "\n")
        with open(base + ".headers", "w") as f:
            for k, v in self.headers.items():
                f.write("%s: %s\n" % (k, v))
        with open(base + ".profile", "wb") as f:
            f.write(parts["profile"])
        cfg = parts.get("sample_type_config", b"")
        with open(base + ".config", "wb") as f:
            f.write(cfg if isinstance(cfg, bytes) else cfg.encode())
        self.answer(200, "")


srv = http.server.HTTPServer(("127.0.0.1", 0), Ingest)
if len(sys.argv) == 4:
    ctx = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
    ctx.load_cert_chain(sys.argv[2], sys.argv[3])
    srv.socket = ctx.wrap_socket(srv.socket, server_side=True)
with open(os.path.join(OUT, "port.tmp"), "w") as f:
    f.write("%d\n" % srv.server_address[1])
os.rename(os.path.join(OUT, "port.tmp"), os.path.join(OUT, "port"))
srv.serve_forever()
