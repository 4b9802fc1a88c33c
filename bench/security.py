#!/usr/bin/env python3
"""bench security: a real c4d-master under the attacks its limits are for.

Each attack runs against a fresh c4d-master of the build tree (its default
limits, unless said), over loopback TCP:

* flood: FLOOD (4,096) connections that never send a byte, from 64
  addresses of 127.0.1.0/24 and one of 127.0.2.1, reopened as the daemon
  closes them, while LOGINS (10) logins with a valid token are made with
  the real c4ctl (`c4ctl ping -c 1`) one after the other.  Reports the
  logins admitted and the slowest (ms).
* nonread: 8 agent sessions sending heartbeats and 4 ctl sessions
  pipelining status requests, none of them reading, each with a 4 KiB
  receive buffer, for DURATION s (60, --short 10); VmRSS of the daemon is
  sampled every 50 ms.  Reports the peak above idle (MiB), with
  server.max_output_total at its default (128 MiB).
* guess: GUESSES (60) hellos with a wrong token from one address, all sent
  at once, then one more every 100 ms for DURATION/2 s.  Reports how many
  were checked (answered "unknown credential", not refused unchecked) in
  the first second and per second after the first FREE+1 (the failures
  free of delay, auth_fail_free, and one), and the warning lines the log
  has about that address.
* sanitizer: reports in the daemons' logs (AddressSanitizer,
  UndefinedBehaviorSanitizer, LeakSanitizer); 0 unless the build tree is
  a sanitizer build.

stdout carries only 'metric NAME VALUE UNIT' lines; progress goes to
stderr.  Every process started here is stopped on exit.  Traffic goes
only to 127.0.0.0/8.  No root needed.

Usage: security.py --build DIR [--short] [--flood N] [--out DIR]
"""
import argparse
import os
import resource
import select
import shutil
import signal
import socket
import struct
import subprocess
import sys
import tempfile
import time

OPS = "bench-operator-token-sec"
AGENT = "bench-agent-token-sec-01"
JOB = "security-job"
MSG_HELLO, MSG_HELLO_REPLY, MSG_HEARTBEAT, MSG_ERROR = 16, 17, 18, 19
MSG_ADMIN_REQUEST = 64
ROLE_AGENT, ROLE_CTL = 1, 3
ADMIN_STATUS = 1
FREE = 3  # server.auth_fail_free, the default
SANITIZER_MARKS = ("ERROR: AddressSanitizer", "runtime error:",
                   "ERROR: LeakSanitizer")


def log(*a):
    print(*a, file=sys.stderr, flush=True)


def metric(name, value, unit):
    print(f"metric {name} {value} {unit}", flush=True)


# ---- the wire: protobuf encoding of the few messages sent here ----------

def varint(v):
    out = bytearray()
    while True:
        b = v & 0x7F
        v >>= 7
        if v:
            out.append(b | 0x80)
        else:
            out.append(b)
            return bytes(out)


def field_varint(num, v):
    return varint(num << 3) + varint(v)


def field_bytes(num, b):
    return varint((num << 3) | 2) + varint(len(b)) + b


def frame(mtype, seq, body_field, body):
    env = (field_varint(1, 1) + field_varint(2, mtype) + field_varint(3, seq)
           + field_bytes(body_field, body))
    return struct.pack(">I", len(env)) + env


def hello(role, token, seq=1):
    body = (field_varint(1, role) + field_bytes(3, JOB.encode())
            + field_bytes(4, b"bench-node") + field_bytes(5, token.encode()))
    return frame(MSG_HELLO, seq, 16, body)


def heartbeat(seq):
    return frame(MSG_HEARTBEAT, seq, 18, field_varint(1, seq))


def status_request(seq):
    return frame(MSG_ADMIN_REQUEST, seq, 64, field_varint(1, ADMIN_STATUS))


def read_frame(sock, deadline):
    """The next frame's envelope bytes, or None when closed or late."""
    buf = b""
    need = 4
    length = None
    while True:
        while len(buf) < need:
            left = deadline - time.monotonic()
            if left <= 0:
                return None
            r, _, _ = select.select([sock], [], [], left)
            if not r:
                return None
            try:
                chunk = sock.recv(need - len(buf))
            except OSError:
                return None
            if not chunk:
                return None
            buf += chunk
        if length is None:
            length = struct.unpack(">I", buf[:4])[0]
            need = 4 + length
            continue
        return buf[4:]


def env_type(env):
    """The type field (2) of an envelope, parsing varint fields only."""
    i = 0
    while i < len(env):
        key, i = parse_varint(env, i)
        num, wt = key >> 3, key & 7
        if wt == 0:
            v, i = parse_varint(env, i)
            if num == 2:
                return v
        elif wt == 2:
            n, i = parse_varint(env, i)
            i += n
        elif wt == 1:
            i += 8
        elif wt == 5:
            i += 4
        else:
            return None
    return None


def parse_varint(b, i):
    v = shift = 0
    while True:
        c = b[i]
        i += 1
        v |= (c & 0x7F) << shift
        shift += 7
        if not c & 0x80:
            return v, i


# ---- the daemon ----------------------------------------------------------

class Master:
    def __init__(self, build, root, name, server_extra=""):
        self.dir = os.path.join(root, name)
        os.makedirs(self.dir)
        self.port = free_port()
        self.addr = f"127.0.0.1:{self.port}"
        conf = os.path.join(self.dir, "c4d-master.yaml")
        with open(conf, "w") as f:
            f.write(f"job: {JOB}\nstate_dir: {self.dir}\n"
                    f"server:\n  listen: {self.addr}\n{server_extra}"
                    f"credentials:\n"
                    f"  - name: ops\n    token: {OPS}\n    roles: [ctl]\n"
                    f"  - name: agents\n    token: {AGENT}\n"
                    f"    roles: [agent]\n")
        self.log = os.path.join(self.dir, "c4d-master.log")
        self.ctl = os.path.join(build, "ctl", "c4ctl")
        with open(self.log, "w") as lf:
            self.proc = subprocess.Popen(
                [os.path.join(build, "daemons", "c4d-master", "c4d-master"),
                 "-d", "-f", conf], stdout=lf, stderr=subprocess.STDOUT)
        deadline = time.monotonic() + 60
        while time.monotonic() < deadline:
            if self.proc.poll() is not None:
                raise RuntimeError(f"c4d-master exited: see {self.log}")
            if self.ping(5)[0]:
                return
            time.sleep(0.1)
        raise RuntimeError("c4d-master not ready in 60 s")

    def ping(self, timeout=30):
        t0 = time.monotonic()
        try:
            r = subprocess.run([self.ctl, "-s", self.addr, "-t", OPS, "ping",
                                "-c", "1"], capture_output=True, text=True,
                               timeout=timeout)
            ok = r.returncode == 0 and "1 received" in r.stdout
        except subprocess.TimeoutExpired:
            ok = False
        return ok, (time.monotonic() - t0) * 1000

    def counters(self):
        import json
        r = subprocess.run([self.ctl, "-s", self.addr, "-t", OPS, "-o",
                            "json", "status"], capture_output=True,
                           text=True, timeout=60)
        if r.returncode != 0:
            return {}
        return json.loads(r.stdout).get("counters", {})

    def rss_kib(self):
        with open(f"/proc/{self.proc.pid}/status") as f:
            for line in f:
                if line.startswith("VmRSS:"):
                    return int(line.split()[1])
        return 0

    def stop(self):
        if self.proc.poll() is None:
            self.proc.send_signal(signal.SIGTERM)
            try:
                self.proc.wait(30)
            except subprocess.TimeoutExpired:
                self.proc.kill()
                self.proc.wait()

    def log_lines(self, *words):
        with open(self.log, errors="replace") as f:
            return [ln for ln in f if all(w in ln for w in words)]


def free_port():
    s = socket.socket()
    s.bind(("127.0.0.1", 0))
    port = s.getsockname()[1]
    s.close()
    return port


# ---- attacks -------------------------------------------------------------

def flood_child(addr, port, n, seconds):
    """Holds n silent connections, reopening closed ones (a process)."""
    def src(i):
        return "127.0.2.1" if i % 4 == 0 else f"127.0.1.{1 + i % 64}"

    def open_one(i):
        s = socket.socket()
        s.setblocking(False)
        try:
            s.bind((src(i), 0))
            s.connect_ex((addr, port))
        except OSError:
            s.close()
            return None
        return s

    socks = [open_one(i) for i in range(n)]
    end = time.monotonic() + seconds
    poller = select.poll()
    for s in socks:
        if s is not None:
            poller.register(s, select.POLLIN)
    byfd = {s.fileno(): (i, s) for i, s in enumerate(socks) if s}
    reopened = 0
    while time.monotonic() < end and reopened < 50 * n:
        for fd, _ in poller.poll(200):
            i, s = byfd.pop(fd, (None, None))
            if s is None:
                continue
            poller.unregister(fd)
            s.close()
            t = open_one(i)
            reopened += 1
            if t is not None:
                byfd[t.fileno()] = (i, t)
                poller.register(t, select.POLLIN)
    os._exit(0)


def attack_flood(build, root, n, logins):
    m = Master(build, root, "flood")
    try:
        kid = os.fork()
        if kid == 0:
            flood_child("127.0.0.1", m.port, n, 120)
        try:
            deadline = time.monotonic() + 60
            while time.monotonic() < deadline:
                c = m.counters()
                if c.get("unauth_evicted", 0) > 0 and \
                        c.get("unauth_refused", 0) > 0:
                    break
                time.sleep(0.2)
            ok, worst = 0, 0.0
            for _ in range(logins):
                good, ms = m.ping()
                ok += good
                worst = max(worst, ms)
            c = m.counters()
        finally:
            os.kill(kid, signal.SIGKILL)
            os.waitpid(kid, 0)
        log(f"flood: {ok}/{logins} logins, slowest {worst:.1f} ms, "
            f"evicted {c.get('unauth_evicted')}, "
            f"refused {c.get('unauth_refused')}")
        metric("security_flood_connections", n, "conns")
        metric("security_flood_logins_ok", ok, "logins")
        metric("security_flood_logins", logins, "logins")
        metric("security_flood_login_max_ms", f"{worst:.1f}", "ms")
        metric("security_flood_evicted", c.get("unauth_evicted", 0), "conns")
        metric("security_flood_refused", c.get("unauth_refused", 0), "conns")
    finally:
        m.stop()
    return m


def attack_nonread(build, root, seconds):
    m = Master(build, root, "nonread")
    try:
        m.counters()
        time.sleep(0.5)
        idle = m.rss_kib()
        peers = []
        for i in range(12):
            role = ROLE_AGENT if i < 8 else ROLE_CTL
            s = socket.socket()
            s.setsockopt(socket.SOL_SOCKET, socket.SO_RCVBUF, 4096)
            s.connect(("127.0.0.1", m.port))
            s.sendall(hello(role, AGENT if role == ROLE_AGENT else OPS))
            env = read_frame(s, time.monotonic() + 30)
            if env is None or env_type(env) != MSG_HELLO_REPLY:
                raise RuntimeError("nonread: hello refused")
            s.setblocking(False)
            peers.append([s, role, 2, b""])
        peak = idle
        end = time.monotonic() + seconds
        next_sample = 0.0
        while time.monotonic() < end:
            for p in peers:
                if p[0] is None:
                    continue
                for _ in range(64):
                    if not p[3]:
                        p[3] = (heartbeat(p[2]) if p[1] == ROLE_AGENT
                                else status_request(p[2]))
                        p[2] += 1
                    try:
                        k = p[0].send(p[3])
                    except BlockingIOError:
                        break
                    except OSError:
                        p[0].close()
                        p[0] = None
                        break
                    p[3] = p[3][k:]
            now = time.monotonic()
            if now >= next_sample:
                peak = max(peak, m.rss_kib())
                next_sample = now + 0.05
            time.sleep(0.001)
        left = sum(1 for p in peers if p[0] is not None)
        for p in peers:
            if p[0] is not None:
                p[0].close()
        c = m.counters()
        log(f"nonread: idle {idle} KiB, peak {peak} KiB, {left} of 12 "
            f"sessions open at the end; paused {c.get('output_paused')}, "
            f"stalled {c.get('output_stalled')}")
        metric("security_nonread_seconds", seconds, "s")
        metric("security_nonread_idle_rss", f"{idle / 1024:.1f}", "MiB")
        metric("security_nonread_peak_above_idle",
               f"{(peak - idle) / 1024:.1f}", "MiB")
        metric("security_nonread_output_paused", c.get("output_paused", 0),
               "times")
        metric("security_nonread_output_stalled",
               c.get("output_stalled", 0), "sessions")
    finally:
        m.stop()
    return m


def attack_guess(build, root, burst, seconds):
    m = Master(build, root, "guess",
               "  max_unauthenticated_per_source: 256\n")
    try:
        t0 = time.monotonic()
        pending = []

        def send_guess():
            s = socket.socket()
            s.connect(("127.0.0.1", m.port))
            s.sendall(hello(ROLE_CTL, "wrong-token-guess"))
            pending.append(s)

        for _ in range(burst):
            send_guess()
        answers = []  # (time since t0, checked)
        end = t0 + seconds
        next_send = time.monotonic()
        while time.monotonic() < end or pending:
            if time.monotonic() >= end + 30:
                break
            if time.monotonic() < end and time.monotonic() >= next_send:
                send_guess()
                next_send += 0.1
            r, _, _ = select.select(pending, [], [], 0.02)
            for s in r:
                env = read_frame(s, time.monotonic() + 5)
                at = time.monotonic() - t0
                pending.remove(s)
                s.close()
                if env is None or env_type(env) != MSG_ERROR:
                    continue
                checked = b"unknown credential" in env
                answers.append((at, checked))
                if not checked and b"unchecked" not in env:
                    log(f"guess: unexpected answer {env!r}")
        for s in pending:
            s.close()
        checked = sorted(at for at, ok in answers if ok)
        first_s = sum(1 for at in checked if at <= 1.0)
        rate = 0.0
        if len(checked) > FREE + 1:
            after = checked[FREE + 1:]
            span = max(after[-1] - checked[FREE], 1e-3)
            rate = len(after) / span
        lines = m.log_lines("127.0.0.1:", "warning")
        c = m.counters()
        log(f"guess: {len(answers)} answered, {len(checked)} checked, "
            f"{first_s} in the first second, {rate:.2f}/s after the first "
            f"{FREE + 1}; {len(lines)} log lines; delayed "
            f"{c.get('auth_delayed')}, throttled {c.get('auth_throttled')}")
        metric("security_guess_sent", len(answers), "hellos")
        metric("security_guess_checked", len(checked), "hellos")
        metric("security_guess_checked_first_s", first_s, "hellos")
        metric("security_guess_checked_rate", f"{rate:.2f}", "per_s")
        metric("security_guess_log_lines", len(lines), "lines")
        metric("security_guess_seconds", f"{seconds:.0f}", "s")
    finally:
        m.stop()
    return m


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--build", required=True)
    ap.add_argument("--short", action="store_true")
    ap.add_argument("--flood", type=int, default=4096)
    ap.add_argument("--logins", type=int, default=10)
    ap.add_argument("--guesses", type=int, default=60)
    ap.add_argument("--out")
    a = ap.parse_args()
    build = os.path.abspath(a.build)
    duration = 10 if a.short else 60
    soft, hard = resource.getrlimit(resource.RLIMIT_NOFILE)
    want = a.flood + 512
    if soft < want:
        resource.setrlimit(resource.RLIMIT_NOFILE,
                           (min(want, hard), hard))
    n = min(a.flood, resource.getrlimit(resource.RLIMIT_NOFILE)[0] - 512)
    root = a.out or tempfile.mkdtemp(prefix="c4-bench-security-")
    os.makedirs(root, exist_ok=True)
    masters = []
    try:
        masters.append(attack_flood(build, root, n, a.logins))
        masters.append(attack_nonread(build, root, duration))
        masters.append(attack_guess(build, root, a.guesses, duration / 2))
        reports = 0
        for m in masters:
            with open(m.log, errors="replace") as f:
                reports += sum(1 for ln in f
                               if any(k in ln for k in SANITIZER_MARKS))
        metric("security_sanitizer_reports", reports, "reports")
    finally:
        if a.out is None:
            shutil.rmtree(root, ignore_errors=True)


if __name__ == "__main__":
    main()
