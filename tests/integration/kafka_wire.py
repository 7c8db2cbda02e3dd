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


def cstring(s):
    """A compact (uvarint length + 1) string of flexible versions; None is the null string."""
    if s is None:
        return b"\x00"
    b = s.encode()
    return uvarint(len(b) + 1) + b


class Reader:
    """Reads a response body: fixed-width integers, classic and compact strings, array lengths, tags."""

    def __init__(self, buf, pos=0):
        self.buf = buf
        self.pos = pos

    def _unpack(self, fmt):
        v = struct.unpack_from(fmt, self.buf, self.pos)[0]
        self.pos += struct.calcsize(fmt)
        return v

    def int8(self):
        return self._unpack(">b")

    def int16(self):
        return self._unpack(">h")

    def int32(self):
        return self._unpack(">i")

    def uvarint(self):
        v, self.pos = read_uvarint(self.buf, self.pos)
        return v

    def string(self):
        """Classic nullable string (int16 length)."""
        n = self.int16()
        if n < 0:
            return None
        s = self.buf[self.pos:self.pos + n].decode()
        self.pos += n
        return s

    def compact_string(self):
        n = self.uvarint() - 1
        if n < 0:
            return None
        s = self.buf[self.pos:self.pos + n].decode()
        self.pos += n
        return s

    def compact_array_len(self):
        return self.uvarint() - 1

    def skip_tags(self):
        for _ in range(self.uvarint()):
            self.uvarint()
            self.pos += self.uvarint()

    def at_end(self):
        return self.pos == len(self.buf)
