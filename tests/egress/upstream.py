#!/usr/bin/env python3
"""Upstream servers for tests/tests/egress.rs, all on 127.0.0.0/8.

Usage: upstream.py DIR CERT KEY
Serves DIR over HTTP on 127.77.0.1, over HTTPS (CERT, KEY) on 127.77.0.2,
a plain TCP server that speaks first ("banner\n", then echoes a line) on
127.77.0.3, and DIR over HTTP on 127.78.0.1 (an address no test policy
covers). Ports are picked by the kernel and printed as one JSON line once
every socket listens: {"http": P, "https": P, "tcp": P, "other": P}.
"""
import functools
import http.server
import json
import socket
import socketserver
import ssl
import sys
import threading

directory, cert, key = sys.argv[1:4]


class Quiet(http.server.SimpleHTTPRequestHandler):
    def log_message(self, *args):
        pass


def http_server(addr):
    handler = functools.partial(Quiet, directory=directory)
    return http.server.ThreadingHTTPServer((addr, 0), handler)


class Banner(socketserver.StreamRequestHandler):
    def handle(self):
        self.wfile.write(b"banner\n")
        self.wfile.flush()
        line = self.rfile.readline()
        self.wfile.write(b"echo " + line)


plain = http_server("127.77.0.1")
tls = http_server("127.77.0.2")
ctx = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
ctx.load_cert_chain(cert, key)
tls.socket = ctx.wrap_socket(tls.socket, server_side=True)
socketserver.ThreadingTCPServer.allow_reuse_address = True
tcp = socketserver.ThreadingTCPServer(("127.77.0.3", 0), Banner)
other = http_server("127.78.0.1")
servers = {"http": plain, "https": tls, "tcp": tcp, "other": other}
for s in servers.values():
    threading.Thread(target=s.serve_forever, daemon=True).start()
print(json.dumps({k: s.server_address[1] for k, s in servers.items()}), flush=True)
sys.stdin.read()  # until the test closes our stdin
