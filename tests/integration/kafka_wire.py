"""Hand-built Kafka protocol requests for the integration tests that need exact bytes on the wire.

Primitives (classic nullable string, unsigned varint) and a blocking loopback connection that sends one
request at a time and checks the correlation id of the answer.
"""
import socket
import struct


def nstring(s):
    """A classic (int16-length) string; None is the null string."""
    if s is None:
        return struct.pack(">h", -1)
    b = s.encode()
    return struct.pack(">h", len(b)) + b


def uvarint(n):
    """Unsigned varint, as the compact types of flexible versions use it."""
    out = b""
    while True:
        b = n & 0x7F
        n >>= 7
        if n:
            out += bytes([b | 0x80])
        else:
            return out + bytes([b])


def read_uvarint(buf, pos):
    """Decodes an unsigned varint of `buf` at `pos`; returns (value, next position)."""
    shift = value = 0
    while True:
        b = buf[pos]
        pos += 1
        value |= (b & 0x7F) << shift
        if not b & 0x80:
            return value, pos
        shift += 7


class Conn:
    """One connection to 127.0.0.1:`port`; request() sends a frame and returns the response after the
    correlation id (a flexible response still starts with its header's tagged fields)."""

    def __init__(self, port, client_id):
        self.sock = socket.create_connection(("127.0.0.1", port), timeout=10)
        self.client_id = client_id
        self.corr = 0

    def request(self, api_key, version, body, flexible=False):
        self.corr += 1
        header = struct.pack(">hhi", api_key, version, self.corr) + nstring(self.client_id)
        if flexible:
            header += b"\x00"  # request header v2: no tagged fields
        payload = header + body
        self.sock.sendall(struct.pack(">i", len(payload)) + payload)
        size = struct.unpack(">i", self._recv(4))[0]
        data = self._recv(size)
        corr = struct.unpack(">i", data[:4])[0]
        assert corr == self.corr, "correlation id %d, expected %d" % (corr, self.corr)
        return data[4:]

    def _recv(self, n):
        out = b""
        while len(out) < n:
            chunk = self.sock.recv(n - len(out))
            if not chunk:
                raise ConnectionError("connection closed by the broker")
            out += chunk
        return out

    def close(self):
        self.sock.close()
