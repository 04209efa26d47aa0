#!/usr/bin/env python3
"""In-container probes for tests/tests/egress.rs; each prints one line.

  sni HOST PORT SERVERNAME   CONNECT HOST:PORT through the proxy, then TLS
                             with SERVERNAME: "connect <status> tls ok|failed"
  connect HOST PORT          CONNECT HOST:PORT through the proxy, then GET
                             /index.html: "<status> <first body line>"
  dns NAME TYPE              one query to the stub over TCP: "rcode=N answers=M"
  labels TYPE LABEL...       the same, with each LABEL as one wire label (any
                             bytes, a '.' or '\\' too)
  banner HOST PORT           a direct TCP connect (name resolved by the libc):
                             "banner <first line> <echo line>"
  socket FAMILY TYPE PROTO   "ok" or "errno=NAME"
"""
import errno
import os
import socket
import ssl
import struct
import sys


def sni(host, port, name):
    proxy = int(os.environ["HTTP_PROXY"].rsplit(":", 1)[1])
    s = socket.create_connection(("127.0.0.1", proxy), timeout=10)
    s.sendall(f"CONNECT {host}:{port} HTTP/1.1\r\nHost: {host}:{port}\r\n\r\n".encode())
    status = s.recv(4096).split(b"\r\n")[0].decode().split(" ")[1]
    ctx = ssl.SSLContext(ssl.PROTOCOL_TLS_CLIENT)
    ctx.check_hostname = False
    ctx.verify_mode = ssl.CERT_NONE
    try:
        t = ctx.wrap_socket(s, server_hostname=name)
        t.sendall(b"GET /index.html HTTP/1.0\r\n\r\n")
        t.recv(100)
        print(f"connect {status} tls ok")
    except (OSError, ssl.SSLError):
        print(f"connect {status} tls failed")


def connect(host, port):
    proxy = int(os.environ["HTTP_PROXY"].rsplit(":", 1)[1])
    s = socket.create_connection(("127.0.0.1", proxy), timeout=10)
    s.sendall(f"CONNECT {host}:{port} HTTP/1.1\r\n\r\n".encode())
    status = s.recv(4096).split(b"\r\n")[0].decode().split(" ")[1]
    body = b""
    if status == "200":
        s.sendall(b"GET /index.html HTTP/1.0\r\n\r\n")
        while chunk := s.recv(4096):
            body += chunk
        body = body.split(b"\r\n\r\n", 1)[-1]
    print(f"{status} {body.decode().strip()}".strip())


def dns(name, qtype):
    labels(qtype, *name.split("."))


def labels(qtype, *names):
    q = struct.pack(">HHHHHH", 0x4242, 0x0100, 1, 0, 0, 0)
    for label in names:
        label = label.encode()
        q += bytes([len(label)]) + label
    q += b"\0" + struct.pack(">HH", int(qtype), 1)
    s = socket.create_connection(("127.0.0.53", 53), timeout=10)
    s.sendall(struct.pack(">H", len(q)) + q)
    n = struct.unpack(">H", s.recv(2))[0]
    r = b""
    while len(r) < n:
        r += s.recv(n - len(r))
    print(f"rcode={r[3] & 15} answers={struct.unpack('>H', r[6:8])[0]}")


def banner(host, port):
    s = socket.create_connection((host, int(port)), timeout=10)
    f = s.makefile("rwb")
    first = f.readline().decode().strip()
    f.write(b"hi\n")
    f.flush()
    print(f"banner {first} {f.readline().decode().strip()}")


def sock(family, typ, proto):
    try:
        socket.socket(int(family), int(typ), int(proto)).close()
        print("ok")
    except OSError as e:
        print(f"errno={errno.errorcode.get(e.errno, e.errno)}")


cmd, args = sys.argv[1], sys.argv[2:]
commands = {"sni": sni, "connect": connect, "dns": dns, "labels": labels}
commands.update({"banner": banner, "socket": sock})
commands[cmd](*args)
