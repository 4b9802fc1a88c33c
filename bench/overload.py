#!/usr/bin/env python3
"""bench overload: C4D's events when the hosts' reports arrive late.

A real c4d-master and one real c4a-agent per simulated host, fed by
tools/c4sim (a 64-rank job on 8 hosts by default, reporting every
interval), run while `stress-ng --cpu N` keeps every core busy (N = 2 x
cores by default).  On top of that load, the agents are stalled: STALLS
times per phase, at seeded random moments, either every agent (the whole
machine starved) or one (one starved host) is stopped with SIGSTOP for
0.5 to 1.5 intervals and then continued.  c4sim keeps reporting in real
time meanwhile, so the job progresses, the stalled agents' reports reach
the master late, and then bunched.  The longest stall is below the
master's hang and node timeouts (2 s), so nothing the master sees is a
fault.  CPU load alone does not make reports late on a kernel with EEVDF
(a woken agent runs within tens of ms): the wake-up probe (a process that
sleeps to every 100 ms of the wall clock under the same load) gives how
late a timer fires.

Each run has two phases, each with a fresh master:

* fault-free: the job runs INTERVALS intervals with no fault; every event
  the master opens is a false event (and a false isolation when its action
  isolates a host or NIC);
* fault: the same job with one injected fault (rotating over slow GPU,
  slow receive NIC, slow transmit NIC, slow connection, non-communication
  hang, communication hang) at interval FAULT_AT; the fault is found when
  an event that opened at or after the onset is of the fault's family and
  one of its suspects names the culprit; every other event is extra.

Events are read with `c4ctl events -o json` every second while a phase
runs and once at its end (the master keeps every open event and the newest
resolved ones; the union by id misses none of a phase's events).  The
master's and agents' interval is --interval-ms (1 s); hang and node
timeouts are the master's defaults.

stdout carries only 'metric NAME VALUE UNIT' lines; progress, each phase's
events and the stress-ng command go to stderr.  Every process started here
(stress-ng, the probe, masters, c4sim and its agents) is stopped on any
exit, also on SIGINT/SIGTERM; a stopped agent is continued first.
Traffic goes only to 127.0.0.1.  No root needed.

Usage: overload.py --build DIR [--runs N] [--short] [--load N]
       [--stalls N] [--out DIR] [--check]
--check exits 1 unless there are 0 false events and every fault was found.
"""
import argparse
import ctypes
import json
import os
import random
import shutil
import signal
import subprocess
import sys
import tempfile
import threading
import time

OPS = "bench-operator-token-ovl"
AGENT = "bench-agent-token-ovl-01"
JOB = "overload-job"
FAULTS = ["slow-gpu", "slow-rx", "slow-tx", "slow-conn", "noncomm-hang",
          "comm-hang"]
# Event kinds (lib/proto/evjson.c names) by family, as lib/scenario/score.c
# groups them; host_slow and job_stall are the engine's MATRIX_EV_HOST_SLOW
# and MATRIX_EV_JOB_STALL once the wire carries them.  A kind not listed
# here names no fault.
FAMILY = {
    "comm_slow_conn": "comm", "comm_slow_tx": "comm", "comm_slow_rx": "comm",
    "comm_slow_ambiguous": "comm", "noncomm_slow": "rank",
    "host_slow": "rank", "comm_hang": "hang", "noncomm_hang": "hang",
    "job_stall": "hang", "node_lost": "node",
}
FAULT_FAMILY = {"slow-gpu": "rank", "slow-rx": "comm", "slow-tx": "comm",
                "slow-conn": "comm", "noncomm-hang": "hang",
                "comm-hang": "hang", "node-lost": "node"}
PR_SET_PDEATHSIG = 1


def log(*a):
    print("overload:", *a, file=sys.stderr, flush=True)


def metric(name, value, unit):
    if isinstance(value, float):
        value = f"{value:.3f}".rstrip("0").rstrip(".") or "0"
    print(f"metric {name} {value} {unit}", flush=True)


class Fail(Exception):
    pass


class Stop(Exception):
    """SIGINT or SIGTERM: clean up and leave."""


def die_with_parent(nice=0):
    """In the child before exec: SIGKILL when the benchmark dies."""
    if nice:
        os.nice(nice)
    try:
        libc = ctypes.CDLL(None, use_errno=True)
        libc.prctl(PR_SET_PDEATHSIG, signal.SIGKILL, 0, 0, 0)
    except OSError:
        pass


def names_culprit(s, fault, t):
    """Does suspect s (event JSON) name the culprit of truth t?

    As lib/scenario/score.c's score_names, on what the event JSON carries:
    host names and GPUs.  A link suspect names both ends (peer_host,
    peer_gpu); one without them is matched by its source end where that
    is the culprit (slow connection, communication hang, slow transmit
    NIC); for a slow receive NIC an rx suspect or a link's far end.
    """
    role, host, gpu = s.get("role"), s.get("host"), s.get("gpu")
    me = (t["host"], t["gpu"])
    peer = (t["peer_host"], t["peer_gpu"])
    dev = (host, gpu)
    if role == "link" and "peer_host" in s:
        far = (s.get("peer_host"), s.get("peer_gpu"))
        if fault in ("slow-conn", "comm-hang"):
            return dev == me and far == peer
        if fault == "slow-rx":
            return far == me
    if fault in ("slow-conn", "comm-hang"):
        return ((role in ("link", "tx") and dev == me) or
                (role == "rx" and dev == peer))
    if fault == "slow-tx":
        return role in ("link", "tx") and dev == me
    if fault == "slow-rx":
        return role == "rx" and dev == me
    if fault == "node-lost":
        return host == t["host"]
    # slow GPU, non-communication hang: the rank, or its host as a whole
    return (role == "rank" and dev == me) or (role == "host" and
                                                host == t["host"])


def matches(ev, fault, t):
    if t.get("onset_ns", 0) == 0 or ev["first_seen_ns"] < t["onset_ns"]:
        return False
    if FAMILY.get(ev["kind"]) != FAULT_FAMILY[fault]:
        return False
    return any(names_culprit(s, fault, t) for s in ev.get("suspects", []))


def isolates(ev):
    """The typed action where the event has one, else the sentence."""
    if ev.get("action_type"):
        return ev["action_type"] in ("isolate_host", "isolate_nic")
    return (ev.get("action") or "").startswith("isolate")


def loadavg():
    with open("/proc/loadavg") as f:
        return float(f.read().split()[0])


def children(pid):
    """Pids whose parent is pid (c4sim's agents)."""
    out = []
    for d in os.listdir("/proc"):
        if d.isdigit():
            try:
                with open(f"/proc/{d}/stat") as f:
                    st = f.read()
            except OSError:
                continue
            # the command may hold spaces and parentheses: fields after ')'
            if int(st[st.rindex(")") + 2:].split()[1]) == pid:
                out.append(int(d))
    return out


def stall_plan(rng, n, first, last, lo, hi):
    """n stalls (start s, length s) spread over [first, last] seconds."""
    plan = []
    seg = (last - first) / n if n else 0
    for i in range(n):
        length = rng.uniform(lo, hi)
        room = seg - length
        if room < 0:
            break
        start = first + i * seg + rng.uniform(0, room)
        plan.append((start, length, rng.random() < 0.5))
    return plan


class Staller(threading.Thread):
    """Stops c4sim's agents as planned: every agent, or one at random."""

    def __init__(self, sim_pid, plan, rng):
        super().__init__(daemon=True)
        self.sim_pid, self.plan, self.rng = sim_pid, plan, rng
        self.quit = threading.Event()
        self.stopped = []
        self.done = []  # (length s, agents stopped)
        self.t0 = time.monotonic()

    def resume(self):
        for p in self.stopped:
            try:
                os.kill(p, signal.SIGCONT)
            except ProcessLookupError:
                pass
        self.stopped = []

    def run(self):
        try:
            for start, length, every in self.plan:
                if self.quit.wait(max(0, self.t0 + start - time.monotonic())):
                    return
                agents = children(self.sim_pid)
                if not agents:
                    continue
                if not every:
                    agents = [self.rng.choice(sorted(agents))]
                for p in agents:
                    try:
                        os.kill(p, signal.SIGSTOP)
                        self.stopped.append(p)
                    except ProcessLookupError:
                        pass
                t = time.monotonic()
                self.quit.wait(length)
                self.resume()
                self.done.append((time.monotonic() - t, len(agents)))
        finally:
            self.resume()

    def finish(self):
        self.quit.set()
        self.join(timeout=10)
        self.resume()


def probe(path):
    """Until SIGTERM: how late a sleep to each 100 ms multiple wakes (ms)."""
    late = []
    stop = []
    signal.signal(signal.SIGTERM, lambda s, f: stop.append(1))
    while not stop:
        t = time.time()
        at = (int(t * 10) + 1) / 10.0
        time.sleep(at - t)
        late.append((time.time() - at) * 1000.0)
    with open(path, "w") as f:
        f.write("\n".join(f"{x:.2f}" for x in late))
    return 0


def burst(evs, window_ns):
    """The most events that opened within window_ns of each other."""
    t = sorted(e["first_seen_ns"] for e in evs)
    best, lo = 0, 0
    for hi in range(len(t)):
        while t[hi] - t[lo] >= window_ns:
            lo += 1
        best = max(best, hi - lo + 1)
    return best


def quantile(v, q):
    v = sorted(v)
    return v[min(len(v) - 1, int(q * len(v)))] if v else 0.0


class Bench:
    def __init__(self, a):
        self.a = a
        b = os.path.abspath(a.build)
        self.master_bin = os.path.join(b, "daemons/c4d-master/c4d-master")
        self.agent_bin = os.path.join(b, "daemons/c4a-agent/c4a-agent")
        self.sim_bin = os.path.join(b, "tools/c4sim/c4sim")
        self.ctl_bin = os.path.join(b, "ctl/c4ctl")
        for p in (self.master_bin, self.agent_bin, self.sim_bin,
                  self.ctl_bin):
            if not os.access(p, os.X_OK):
                raise Fail(f"missing {p}: build the tree first")
        # c4sim's workdir holds the agents' unix sockets: keep it short
        self.tmp = tempfile.mkdtemp(prefix="c4-ovl-", dir="/tmp")
        self.procs = []
        self.loads = []
        self.stalls = []  # (length s, agents stopped)
        self.staller = None
        self.probe = None

    # ------------------------------------------------------------ processes
    def spawn(self, argv, out, nice=0):
        """argv in its own process group, logging to out; dies with us."""
        f = open(out, "w")
        try:
            p = subprocess.Popen(argv, stdout=f, stderr=subprocess.STDOUT,
                                 stdin=subprocess.DEVNULL,
                                 start_new_session=True,
                                 preexec_fn=lambda: die_with_parent(nice))
        finally:
            f.close()
        self.procs.append(p)
        return p

    def stop(self, p, wait=10):
        """SIGTERM to p's group, SIGKILL after wait seconds."""
        if p.poll() is None:
            try:
                os.killpg(p.pid, signal.SIGTERM)
                os.killpg(p.pid, signal.SIGCONT)  # a stalled agent too
                p.wait(timeout=wait)
            except ProcessLookupError:
                pass
            except subprocess.TimeoutExpired:
                os.killpg(p.pid, signal.SIGKILL)
                p.wait()
        # members of the group that outlived their leader
        try:
            os.killpg(p.pid, signal.SIGKILL)
        except (ProcessLookupError, PermissionError):
            pass
        if p in self.procs:
            self.procs.remove(p)

    def cleanup(self):
        if self.staller is not None:
            self.staller.finish()
        for p in reversed(list(self.procs)):
            try:
                self.stop(p, wait=5)
            except Exception:  # keep stopping the rest
                pass
        if self.a.out:
            os.makedirs(self.a.out, exist_ok=True)
            dst = os.path.join(self.a.out, "overload-logs")
            shutil.rmtree(dst, ignore_errors=True)
            shutil.copytree(self.tmp, dst, ignore_dangling_symlinks=True,
                            ignore=shutil.ignore_patterns("*.sock", "*.db*"))
        shutil.rmtree(self.tmp, ignore_errors=True)

    def start_load(self, total_s):
        n = self.a.load
        if n == 0:
            log("no load (--load 0)")
            return
        if shutil.which("stress-ng") is None:
            raise Fail("stress-ng not found (scripts/deps installs it)")
        # --timeout bounds it even if this script is SIGKILLed with its
        # death signal lost
        argv = ["stress-ng", "--cpu", str(n), "--cpu-load", "100",
                "--timeout", f"{int(total_s)}s", "--quiet"]
        log("load:", " ".join(argv))
        self.stress = self.spawn(argv, os.path.join(self.tmp, "stress.log"))
        time.sleep(self.a.settle)
        if self.stress.poll() is not None:
            raise Fail("stress-ng exited: see its log")

    def start_probe(self):
        self.probe_f = os.path.join(self.tmp, "probe.txt")
        self.probe = self.spawn([sys.executable, os.path.abspath(__file__),
                                 "--probe", self.probe_f],
                                os.path.join(self.tmp, "probe.log"),
                                nice=self.a.host_nice)

    def probe_result(self):
        """The probe's wake-up delays (ms), after stopping it."""
        self.stop(self.probe)
        try:
            with open(self.probe_f) as f:
                return [float(x) for x in f.read().split()]
        except (OSError, ValueError):
            return []

    # ------------------------------------------------------------ master
    def start_master(self, d):
        os.makedirs(d)
        conf = os.path.join(d, "master.yaml")
        with open(conf, "w") as f:
            f.write(f"""job: {JOB}
state_dir: '{d}'
detection: {{interval: {self.a.interval_ms}ms}}
server: {{listen: "127.0.0.1:0"}}
events: {{keep_resolved: 1000}}
log: {{level: info}}
credentials:
  - {{name: agents, token: {AGENT}, roles: [agent], jobs: [{JOB}]}}
  - {{name: ops, token: {OPS}, roles: [ctl]}}
""")
        mlog = os.path.join(d, "master.log")
        p = self.spawn([self.master_bin, "-d", "-f", conf], mlog)
        t0 = time.monotonic()
        while time.monotonic() - t0 < 20:
            with open(mlog) as f:
                for line in f:
                    i = line.find("ready on ")
                    if i >= 0:
                        return p, line[i + 9:].split()[0]
            if p.poll() is not None:
                raise Fail(f"c4d-master exited: see {mlog}")
            time.sleep(0.05)
        raise Fail(f"c4d-master not ready: see {mlog}")

    def events(self, addr):
        """The master's events by id; None when it did not answer."""
        try:
            r = subprocess.run([self.ctl_bin, "-s", addr, "-t", OPS, "-o",
                                "json", "events"], capture_output=True,
                               text=True, timeout=10)
        except subprocess.TimeoutExpired:
            return None
        if r.returncode != 0:
            return None
        out = {}
        for line in r.stdout.splitlines():
            line = line.strip()
            if line:
                ev = json.loads(line)
                out[ev["id"]] = ev
        return out

    # ------------------------------------------------------------ phases
    def phase(self, run, fault):
        """One job under load; returns (events by id, truth or None)."""
        tag = f"r{run:02d}-{'free' if fault == 'none' else fault}"
        d = os.path.join(self.tmp, tag)
        master, addr = self.start_master(d)
        truth_f = os.path.join(d, "truth.json")
        ivs = self.a.intervals
        argv = [self.sim_bin, "--master", addr, "--token", AGENT,
                "--job", JOB, "--ranks", str(self.a.ranks),
                "--layout", self.a.layout, "--agent", self.agent_bin,
                "--interval", f"{self.a.interval_ms}ms",
                "--intervals", str(ivs), "--seed", str(self.a.seed + run),
                "--workdir", os.path.join(d, "w"), "--truth", truth_f]
        if fault != "none":
            argv += ["--fault", fault, "--slowdown", str(self.a.slowdown),
                     "--fault_at", str(self.a.fault_at)]
        slog = os.path.join(d, "sim.log")
        sim = self.spawn(argv, slog, nice=self.a.host_nice)
        iv_s = self.a.interval_ms / 1000.0
        # agents' start-up, the intervals, and the job's end, under load
        deadline = time.monotonic() + 30 + ivs * iv_s * 2
        seen = {}
        next_poll = 0.0
        rng = random.Random(f"{self.a.seed}/{run}/{fault}")
        plan = stall_plan(rng, self.a.stalls, 2 * iv_s, (ivs - 1) * iv_s,
                          self.a.stall_min * iv_s, self.a.stall_max * iv_s)
        while sim.poll() is None:
            if self.staller is None and plan:
                with open(slog) as f:
                    if "injecting" in f.read():  # agents up, job starts
                        self.staller = Staller(sim.pid, plan, rng)
                        self.staller.start()
            if time.monotonic() > deadline:
                self.stop(sim)
                raise Fail(f"{tag}: c4sim did not end: see {d}/sim.log")
            if master.poll() is not None:
                raise Fail(f"{tag}: c4d-master exited: see {d}/master.log")
            if time.monotonic() >= next_poll:
                seen.update(self.events(addr) or {})
                next_poll = time.monotonic() + 1.0
            time.sleep(0.1)
        if self.staller is not None:
            self.staller.finish()
            self.stalls += self.staller.done
            log(f"{tag}: stalls " + (", ".join(
                f"{t:.2f} s of {n} agent{'s' if n > 1 else ''}"
                for t, n in self.staller.done) or "none"))
            self.staller = None
        if sim.returncode != 0:
            raise Fail(f"{tag}: c4sim rc {sim.returncode}: see {d}/sim.log")
        # what the last intervals' reports still open
        time.sleep(self.a.grace * iv_s)
        last = self.events(addr)
        if last is None:
            raise Fail(f"{tag}: c4ctl events failed at the end")
        seen.update(last)
        self.loads.append(loadavg())
        self.stop(master)
        truth = None
        if fault != "none":
            with open(truth_f) as f:
                truth = json.load(f)
        with open(os.path.join(d, "events.jsonl"), "w") as f:
            for ev in seen.values():
                f.write(json.dumps(ev) + "\n")
        return seen, truth

    def describe(self, evs, most=12):
        """Events, oldest first, on stderr: the first most, then counts."""
        evs = sorted(evs, key=lambda e: e["first_seen_ns"])
        t0 = evs[0]["first_seen_ns"] if evs else 0
        for e in evs[:most]:
            sus = ",".join(f"{s.get('role')}:{s.get('host')}"
                           f"{'/' + str(s['gpu']) if 'gpu' in s else ''}"
                           for s in e.get("suspects", [])[:3])
            log(f"    +{(e['first_seen_ns'] - t0) / 1e9:6.2f}s "
                f"{e['kind']:<20} {e['state']:<8} [{sus}] "
                f"{e.get('action') or '-'}")
        if len(evs) > most:
            kinds = {}
            for e in evs[most:]:
                kinds[e["kind"]] = kinds.get(e["kind"], 0) + 1
            log(f"    ... {len(evs) - most} more: " + ", ".join(
                f"{k} {v}" for k, v in sorted(kinds.items())))

    def run(self):
        a = self.a
        iv_s = a.interval_ms / 1000.0
        per_phase = 10 + (a.intervals + a.grace + 4) * iv_s
        self.start_load(a.settle + 2 * a.runs * per_phase * 2 + 120)
        self.start_probe()
        t_start = time.monotonic()
        false_ev, false_iso, false_max = 0, 0, 0
        found, extra, extra_iso, storm = 0, 0, 0, 0
        kinds = {}
        for r in range(a.runs):
            evs, _ = self.phase(r, "none")
            n = len(evs)
            iso = sum(isolates(e) for e in evs.values())
            false_ev += n
            false_iso += iso
            false_max = max(false_max, n)
            storm = max(storm, burst(evs.values(), a.interval_ms * 10**6))
            for e in evs.values():
                kinds[e["kind"]] = kinds.get(e["kind"], 0) + 1
            log(f"run {r:2d} fault-free: {n} events, {iso} isolating, "
                f"load {self.loads[-1]:.1f}")
            self.describe(evs.values())
            fault = a.faults[r % len(a.faults)]
            evs, t = self.phase(r, fault)
            hit = [e for e in evs.values() if matches(e, fault, t)]
            other = [e for e in evs.values() if not matches(e, fault, t)]
            found += bool(hit)
            extra += len(other)
            extra_iso += sum(isolates(e) for e in other)
            log(f"run {r:2d} {fault} at {t['host']}/{t['gpu']}: "
                f"{'found' if hit else 'MISSED'}, {len(other)} extra, "
                f"load {self.loads[-1]:.1f}")
            self.describe(evs.values())
        wall = time.monotonic() - t_start
        late = self.probe_result()
        metric("overload_runs", a.runs, "runs")
        metric("overload_stressors", a.load, "processes")
        metric("overload_cores", os.cpu_count(), "cores")
        metric("overload_interval", iv_s, "s")
        metric("overload_ranks", a.ranks, "ranks")
        metric("overload_load", sum(self.loads) / len(self.loads),
               "loadavg")
        metric("overload_load_min", min(self.loads), "loadavg")
        metric("overload_wake_late_p50", quantile(late, 0.5), "ms")
        metric("overload_wake_late_p99", quantile(late, 0.99), "ms")
        metric("overload_wake_late_max", max(late, default=0.0), "ms")
        metric("overload_stalls", len(self.stalls), "stalls")
        metric("overload_stalls_all", sum(n > 1 for _, n in self.stalls),
               "stalls")
        metric("overload_stall_max", max((t for t, _ in self.stalls),
                                         default=0.0), "s")
        metric("overload_false_events", false_ev, "events")
        metric("overload_false_events_max", false_max, "events")
        metric("overload_false_burst", storm, "events")
        metric("overload_false_isolations", false_iso, "events")
        metric("overload_faults", a.runs, "faults")
        metric("overload_faults_found", found, "faults")
        metric("overload_extra_events", extra, "events")
        metric("overload_extra_isolations", extra_iso, "events")
        metric("overload_wall", wall, "s")
        if kinds:
            log("false events by kind:", ", ".join(
                f"{k} {v}" for k, v in sorted(kinds.items())))
        return false_ev == 0 and found == a.runs


def main():
    if len(sys.argv) == 3 and sys.argv[1] == "--probe":
        return probe(sys.argv[2])
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--build", required=True, help="release build tree")
    ap.add_argument("--runs", type=int, default=20)
    ap.add_argument("--short", action="store_true",
                    help="at most 3 runs of 10 intervals: a quick check")
    ap.add_argument("--load", type=int, default=None,
                    help="stress-ng CPU workers (default 2 x cores; 0: none)")
    ap.add_argument("--stalls", type=int, default=2,
                    help="agent stalls per phase (0: CPU load only)")
    ap.add_argument("--stall-min", type=float, default=0.5,
                    help="shortest stall, in intervals")
    ap.add_argument("--stall-max", type=float, default=1.5,
                    help="longest stall, in intervals")
    ap.add_argument("--host-nice", type=int, default=0,
                    help="nice of c4sim and its agents (the hosts)")
    ap.add_argument("--ranks", type=int, default=64)
    ap.add_argument("--layout", default="tp-dp")
    ap.add_argument("--interval-ms", type=int, default=1000)
    ap.add_argument("--intervals", type=int, default=12,
                    help="intervals per phase")
    ap.add_argument("--fault-at", type=int, default=4)
    ap.add_argument("--slowdown", type=float, default=3.0)
    ap.add_argument("--faults", default=",".join(FAULTS),
                    help="faults the runs rotate over (c4sim names)")
    ap.add_argument("--grace", type=int, default=3,
                    help="intervals to wait for events after the job ends")
    ap.add_argument("--settle", type=float, default=5.0,
                    help="seconds of load before the first run")
    ap.add_argument("--seed", type=int, default=1000)
    ap.add_argument("--out", help="copy logs and events here (use out/)")
    ap.add_argument("--check", action="store_true")
    a = ap.parse_args()
    if a.short:
        a.runs, a.intervals = min(a.runs, 3), 10
    if a.load is None:
        a.load = 2 * (os.cpu_count() or 1)
    a.faults = a.faults.split(",")
    if any(f not in FAULT_FAMILY for f in a.faults):
        ap.error("--faults: " + ", ".join(FAULT_FAMILY))
    if a.stalls and a.stall_max * a.interval_ms >= 2000:
        log("note: stalls of 2 s or more outlast the master's default "
            "hang and node timeouts: a silent host is then a fault")
    if not (1 <= a.runs <= 1000 and 1 <= a.fault_at < a.intervals <= 600 and
            0 <= a.load <= 1024 and 100 <= a.interval_ms <= 10000 and
            a.ranks % 8 == 0 and 8 <= a.ranks <= 4096 and
            0 <= a.stalls <= 16 and
            0 < a.stall_min <= a.stall_max <= 10 and
            0 <= a.host_nice <= 19):
        ap.error("--runs 1..1000, 1 <= --fault-at < --intervals <= 600, "
                 "--load 0..1024, --interval-ms 100..10000, --ranks a "
                 "multiple of 8 in 8..4096, --stalls 0..16, 0 < "
                 "--stall-min <= --stall-max <= 10, --host-nice 0..19")

    def on_signal(sig, frame):
        raise Stop(signal.Signals(sig).name)
    signal.signal(signal.SIGINT, on_signal)
    signal.signal(signal.SIGTERM, on_signal)
    b = None
    rc = 1
    try:
        b = Bench(a)
        ok = b.run()
        rc = 0 if ok or not a.check else 1
    except Stop as e:
        log("stopped by", e)
        rc = 130
    except Fail as e:
        log("failed:", e)
    finally:
        if b is not None:
            signal.signal(signal.SIGINT, signal.SIG_IGN)
            signal.signal(signal.SIGTERM, signal.SIG_IGN)
            b.cleanup()
    return rc


if __name__ == "__main__":
    sys.exit(main())
