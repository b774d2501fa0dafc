#!/usr/bin/env python3
"""The attacks of prfmon/tests/it/serve_attacks.rs as a load, for benches/scripts/serve_load.sh:
an idle-connection flood, slowloris headers, clients that pipeline /metrics requests and never
read, clients that read /metrics slowly (256 KiB/s), and endless header lines, all at once against
one HTTP server on this machine, for a bounded time. Standard library only.

Usage: serve_attack.py HOST:PORT [--seconds S] [--idle N] [--slow N] [--pipeliners N]
                       [--slow-readers N] [--endless N] [--rcvbuf BYTES]

The pipeliners and slow readers hold their answers only if those do not fit in the kernel's
socket buffers: against a multi-megabyte /metrics (serve_load.sh with WIDE_INSTANCES), give them
a small receive buffer with --rcvbuf (e.g. 65536), which also stops the kernel from growing it.

Only loopback targets are accepted (127.0.0.0/8, localhost, ::1).
"""

import argparse
import ipaddress
import resource
import socket
import sys
import threading
import time


def loopback(host):
    if host == "localhost":
        return True
    try:
        return ipaddress.ip_address(host).is_loopback
    except ValueError:
        return False


RCVBUF = 0  # --rcvbuf: the receive buffer of the clients that ask for /metrics (0: the kernel's)


def connect(addr, rcvbuf=0):
    try:
        s = socket.socket(socket.AF_INET6 if ":" in addr[0] else socket.AF_INET, socket.SOCK_STREAM)
        if rcvbuf:
            s.setsockopt(socket.SOL_SOCKET, socket.SO_RCVBUF, rcvbuf)
        s.settimeout(2)
        s.connect(addr)
        return s
    except OSError:
        return None


def idle(addr, n, stop, held):
    """Opens up to n idle connections and keeps them (reopening those the server closed)."""
    while not stop.is_set():
        while len(held) < n and not stop.is_set():
            s = connect(addr)
            if s is None:
                break
            held.append(s)
        time.sleep(0.5)
        # Drop the ones the server closed (readable with EOF).
        for s in list(held):
            s.setblocking(False)
            try:
                if s.recv(1) == b"":
                    held.remove(s)
                    s.close()
            except BlockingIOError:
                pass
            except OSError:
                held.remove(s)
                s.close()


def slowloris(addr, stop):
    """A request head sent one byte a second, reconnecting when cut off."""
    while not stop.is_set():
        s = connect(addr)
        if s is None:
            time.sleep(0.2)
            continue
        try:
            s.sendall(b"GET /metrics HTTP/1.1\r\nHost: slow\r\nX-Slow: ")
            while not stop.is_set():
                time.sleep(1)
                s.sendall(b"a")
        except OSError:
            pass
        finally:
            s.close()


def reconnecting(addr, stop, first, then, rcvbuf=0):
    """Sends `first`, then `then` again and again, reconnecting whenever the server cuts off."""
    while not stop.is_set():
        s = connect(addr, rcvbuf)
        if s is None:
            time.sleep(0.2)
            continue
        s.settimeout(1)
        try:
            s.sendall(first)
            while not stop.is_set():
                try:
                    s.sendall(then)
                except socket.timeout:
                    pass  # blocked: the server stopped reading this connection
        except OSError:
            pass
        finally:
            s.close()
        time.sleep(0.05)


def pipeliner(addr, stop):
    """Pipelines /metrics requests as fast as the server takes them and never reads."""
    request = b"GET /metrics HTTP/1.1\r\nHost: pipeliner\r\n\r\n" * 100
    reconnecting(addr, stop, b"", request, RCVBUF)


def slow_reader(addr, stop):
    """Asks for /metrics and reads it at 256 KiB/s (64 KiB every 250 ms), again and again."""
    while not stop.is_set():
        s = connect(addr, RCVBUF)
        if s is None:
            time.sleep(0.2)
            continue
        try:
            s.sendall(b"GET /metrics HTTP/1.1\r\nHost: slow-reader\r\n\r\n")
            while not stop.is_set():
                time.sleep(0.25)
                try:
                    if s.recv(65536) == b"":
                        break
                except socket.timeout:
                    pass
        except OSError:
            pass
        finally:
            s.close()


def endless(addr, stop):
    """One header line that never ends."""
    reconnecting(addr, stop, b"GET /metrics HTTP/1.1\r\nHost: x\r\nX-Endless: ", b"a" * 65536)


def main():
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("target", help="HOST:PORT on this machine")
    p.add_argument("--seconds", type=float, default=30)
    p.add_argument("--idle", type=int, default=400)
    p.add_argument("--slow", type=int, default=16)
    p.add_argument("--pipeliners", type=int, default=4)
    p.add_argument("--slow-readers", type=int, default=0)
    p.add_argument("--endless", type=int, default=2)
    p.add_argument("--rcvbuf", type=int, default=0, help="receive buffer of pipeliners and slow readers")
    a = p.parse_args()
    global RCVBUF
    RCVBUF = a.rcvbuf
    host, _, port = a.target.rpartition(":")
    host = host.strip("[]")
    if not loopback(host):
        sys.exit(f"serve_attack.py: {host} is not a loopback address: refused")
    addr = (host, int(port))
    soft, hard = resource.getrlimit(resource.RLIMIT_NOFILE)
    resource.setrlimit(resource.RLIMIT_NOFILE, (hard, hard))
    stop = threading.Event()
    held = []
    threads = [threading.Thread(target=idle, args=(addr, a.idle, stop, held), daemon=True)]
    threads += [threading.Thread(target=slowloris, args=(addr, stop), daemon=True) for _ in range(a.slow)]
    threads += [threading.Thread(target=pipeliner, args=(addr, stop), daemon=True) for _ in range(a.pipeliners)]
    threads += [threading.Thread(target=slow_reader, args=(addr, stop), daemon=True) for _ in range(a.slow_readers)]
    threads += [threading.Thread(target=endless, args=(addr, stop), daemon=True) for _ in range(a.endless)]
    for t in threads:
        t.start()
    time.sleep(a.seconds)
    stop.set()
    for t in threads:
        t.join(timeout=3)
    for s in held:
        s.close()


if __name__ == "__main__":
    main()
