"""The chaos test's private network: Linux network namespaces joined by veth pairs to a bridge in a hub namespace.

    hub namespace (sl-<pid>-hub): bridge br0, one veth end per node ("v-<node>")
    node namespaces (sl-<pid>-zk, -b1, -b2, -b3, -cl): the other veth end "eth0", address 10.77.<n>.<host>/24, lo up

Nothing touches the host's network namespace: no address, route or rule is added outside the namespaces this
object created. Faults, all undone by heal_all():
  - cut(a, b): nftables drop rules in both nodes' namespaces (table inet sluice_chaos), traffic a<->b only;
  - link_down(node): the hub side of the node's veth down (the node loses carrier: total isolation);
  - slow(node, rate): a tbf qdisc (token bucket: queueing delay, tail drop) on both ends of the node's veth;
  - lossy(node, percent): nftables random drop of that share of the node's packets, both directions.
The kernel may lack netem (sch_netem): `netem_available()` probes it, and slow/lossy links then use tbf and
nftables' numgen instead (printed by the caller).
close() deletes exactly the namespaces this object created (which ends their interfaces and rules).
"""
import ctypes
import os
import shutil
import subprocess

CLONE_NEWNET = 0x40000000


class Unavailable(Exception):
    """A tool or kernel feature the test needs is missing (the caller skips)."""


def _run(args, check=True, timeout=20):
    p = subprocess.run(args, stdin=subprocess.DEVNULL, capture_output=True, timeout=timeout)
    if check and p.returncode != 0:
        raise RuntimeError("%s -> %d: %s" % (" ".join(args), p.returncode,
                                             (p.stderr or p.stdout).decode("utf-8", "replace").strip()))
    return p


def check_requirements():
    """Raises Unavailable naming what is missing: root/CAP_NET_ADMIN, ip, nft, tc, netns support."""
    for tool in ("ip", "nft", "tc"):
        if shutil.which(tool) is None:
            raise Unavailable("`%s` not installed (Debian: iproute2 for ip/tc, nftables for nft)" % tool)
    if os.geteuid() != 0:
        raise Unavailable("network namespaces need root (CAP_NET_ADMIN and CAP_SYS_ADMIN)")
    name = "sl-%d-probe" % os.getpid()
    p = _run(["ip", "netns", "add", name], check=False)
    if p.returncode != 0:
        raise Unavailable("cannot create a network namespace: %s" % p.stderr.decode().strip())
    try:
        p = _run(["ip", "netns", "exec", name, "nft", "add", "table", "inet", "probe"], check=False)
        if p.returncode != 0:
            raise Unavailable("nftables does not work in a namespace: %s" % p.stderr.decode().strip())
        p = _run(["ip", "-n", name, "link", "add", "pa", "type", "veth", "peer", "name", "pb"], check=False)
        if p.returncode != 0:
            raise Unavailable("cannot create a veth pair: %s" % p.stderr.decode().strip())
        p = _run(["ip", "-n", name, "link", "add", "pbr", "type", "bridge"], check=False)
        if p.returncode != 0:
            raise Unavailable("cannot create a bridge: %s" % p.stderr.decode().strip())
    finally:
        _run(["ip", "netns", "del", name], check=False)


class Network:
    """Namespaces for `nodes` (names such as "zk", "b1", "cl") on one bridge; addresses from `hosts`."""

    def __init__(self, prefix, subnet_octet, hosts):
        self.prefix = prefix                  # e.g. "sl-1234-"
        self.octet = subnet_octet             # 10.77.<octet>.0/24
        self.hosts = dict(hosts)              # node -> last address octet
        self.created = []                     # namespaces this object created, deleted by close()
        self.cuts = set()                     # frozenset({a, b}) pairs cut now
        self.down = set()
        self.shaped = set()
        self.lossy = {}
        self.netem = None

    def ns(self, node):
        return self.prefix + node

    def addr(self, node):
        return "10.77.%d.%d" % (self.octet, self.hosts[node])

    def exec_prefix(self, node):
        return ["ip", "netns", "exec", self.ns(node)]

    def _nsrun(self, node, args, check=True):
        return _run(self.exec_prefix(node) + args, check=check)

    def setup(self):
        hub = self.ns("hub")
        _run(["ip", "netns", "add", hub])
        self.created.append(hub)
        _run(["ip", "-n", hub, "link", "set", "lo", "up"])
        _run(["ip", "-n", hub, "link", "add", "br0", "type", "bridge"])
        _run(["ip", "-n", hub, "link", "set", "br0", "up"])
        for node in self.hosts:
            ns = self.ns(node)
            _run(["ip", "netns", "add", ns])
            self.created.append(ns)
            _run(["ip", "-n", ns, "link", "set", "lo", "up"])
            _run(["ip", "-n", hub, "link", "add", "v-" + node, "type", "veth", "peer", "name", "eth0", "netns", ns])
            _run(["ip", "-n", hub, "link", "set", "v-" + node, "master", "br0"])
            _run(["ip", "-n", hub, "link", "set", "v-" + node, "up"])
            _run(["ip", "-n", ns, "addr", "add", self.addr(node) + "/24", "dev", "eth0"])
            _run(["ip", "-n", ns, "link", "set", "eth0", "up"])
            # One table per node holding every drop rule of the faults; flushed by heal_all().
            _run(self.exec_prefix(node) + ["nft", "add", "table", "inet", "sluice_chaos"])
            _run(self.exec_prefix(node) + ["nft", "add", "chain", "inet", "sluice_chaos", "in",
                                           "{ type filter hook input priority 0 ; policy accept ; }"])
            _run(self.exec_prefix(node) + ["nft", "add", "chain", "inet", "sluice_chaos", "out",
                                           "{ type filter hook output priority 0 ; policy accept ; }"])

    def probe_netem(self):
        """True when `tc qdisc add ... netem` works in these namespaces (the kernel has sch_netem)."""
        if self.netem is None:
            node = next(iter(self.hosts))
            p = self._nsrun(node, ["tc", "qdisc", "add", "dev", "eth0", "root", "netem", "delay", "10ms"], check=False)
            self.netem = p.returncode == 0
            if self.netem:
                self._nsrun(node, ["tc", "qdisc", "del", "dev", "eth0", "root"], check=False)
        return self.netem

    def reachable(self, a, b, timeout=1.0, port=9):
        """A TCP connection from node a to a short-lived listener of node b (setup check; no ping needed)."""
        import sys
        server = subprocess.Popen(self.exec_prefix(b) + [sys.executable, "-c",
                                  "import socket,sys; s=socket.socket(); s.setsockopt(socket.SOL_SOCKET, "
                                  "socket.SO_REUSEADDR, 1); s.bind((sys.argv[1], int(sys.argv[2]))); s.listen(); "
                                  "print('up', flush=True); s.settimeout(%f); s.accept()" % (timeout + 2),
                                  self.addr(b), str(port)], stdout=subprocess.PIPE, stderr=subprocess.DEVNULL)
        try:
            server.stdout.readline()
            p = self._nsrun(a, [sys.executable, "-c", "import socket,sys; socket.create_connection((sys.argv[1], "
                                "int(sys.argv[2])), timeout=%f)" % timeout, self.addr(b), str(port)], check=False)
            return p.returncode == 0
        finally:
            server.kill()
            server.wait()

    # ---- faults ----

    def cut(self, a, b):
        """Drops all traffic between nodes a and b, both directions, in both namespaces."""
        key = frozenset((a, b))
        if key in self.cuts:
            return
        for x, y in ((a, b), (b, a)):
            self._nsrun(x, ["nft", "add", "rule", "inet", "sluice_chaos", "in", "ip", "saddr", self.addr(y), "drop"])
            self._nsrun(x, ["nft", "add", "rule", "inet", "sluice_chaos", "out", "ip", "daddr", self.addr(y), "drop"])
        self.cuts.add(key)

    def link_down(self, node):
        _run(["ip", "-n", self.ns("hub"), "link", "set", "v-" + node, "down"])
        self.down.add(node)

    def link_up(self, node):
        _run(["ip", "-n", self.ns("hub"), "link", "set", "v-" + node, "up"])
        self.down.discard(node)

    def slow(self, node, rate_kbit, latency_ms=400, delay_ms=None):
        """Slows the node's link both ways: netem delay when available, else a tbf token bucket of rate_kbit."""
        for where in (self.exec_prefix(node) + ["tc", "qdisc", "replace", "dev", "eth0", "root"],
                      ["ip", "netns", "exec", self.ns("hub"), "tc", "qdisc", "replace", "dev", "v-" + node, "root"]):
            if self.netem and delay_ms:
                _run(where + ["netem", "delay", "%dms" % delay_ms, "%dms" % max(1, delay_ms // 4)])
            else:
                _run(where + ["tbf", "rate", "%dkbit" % rate_kbit, "burst", "16kb", "latency", "%dms" % latency_ms])
        self.shaped.add(node)

    def unslow(self, node):
        self._nsrun(node, ["tc", "qdisc", "del", "dev", "eth0", "root"], check=False)
        _run(["ip", "netns", "exec", self.ns("hub"), "tc", "qdisc", "del", "dev", "v-" + node, "root"], check=False)
        self.shaped.discard(node)

    def lose(self, node, percent):
        """Drops `percent` % of the node's packets at random, each direction (nftables numgen)."""
        for chain in ("in", "out"):
            self._nsrun(node, ["nft", "add", "rule", "inet", "sluice_chaos", chain, "ip", "saddr" if chain == "in"
                               else "daddr", "10.77.%d.0/24" % self.octet, "numgen", "random", "mod", "100", "<",
                               str(int(percent)), "drop"])
        self.lossy[node] = percent

    def heal_all(self):
        """Removes every fault: rules flushed, links up, qdiscs deleted."""
        for node in self.hosts:
            self._nsrun(node, ["nft", "flush", "chain", "inet", "sluice_chaos", "in"], check=False)
            self._nsrun(node, ["nft", "flush", "chain", "inet", "sluice_chaos", "out"], check=False)
        for node in list(self.down):
            self.link_up(node)
        for node in list(self.shaped):
            self.unslow(node)
        self.cuts.clear()
        self.lossy.clear()

    def heal_cuts(self):
        """Removes the drop rules only (cuts and losses)."""
        for node in self.hosts:
            self._nsrun(node, ["nft", "flush", "chain", "inet", "sluice_chaos", "in"], check=False)
            self._nsrun(node, ["nft", "flush", "chain", "inet", "sluice_chaos", "out"], check=False)
        self.cuts.clear()
        self.lossy.clear()

    def enter(self, node):
        """Moves the calling thread (call it from the main thread before any other thread exists) into the node's
        namespace: sockets it and its later threads and children open are then in that namespace."""
        libc = ctypes.CDLL(None, use_errno=True)
        fd = os.open("/run/netns/" + self.ns(node), os.O_RDONLY)
        try:
            if libc.setns(fd, CLONE_NEWNET) != 0:
                e = ctypes.get_errno()
                raise OSError(e, "setns(%s): %s" % (self.ns(node), os.strerror(e)))
        finally:
            os.close(fd)

    def close(self):
        """Deletes the namespaces this object created (their veths, bridge, rules and qdiscs go with them)."""
        for ns in reversed(self.created):
            _run(["ip", "netns", "del", ns], check=False)
        self.created = []
