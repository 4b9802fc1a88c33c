#!/usr/bin/env python3
"""NCCL end-to-end scenarios for the c4 profiler plugin (GPU machine).

  nccl_e2e.py run --scenario NAME --nproc N --workdir DIR [options]
  nccl_e2e.py worker ...            (started by 'run', one per GPU)

'run' starts one worker process per GPU (no torchrun), each a
torch.distributed (NCCL backend) loop of all-reduces sized like gradient
buckets, with NCCL_PROFILER_PLUGIN and the C4_* variables taken from the
environment.  With --netns, rank i runs inside network namespace
NETNS-PREFIX+i (ip netns exec).  While the workers run, it polls the
job master with c4ctl (status, and events where the master has that
command) and writes, in DIR:

  timeline.jsonl   what each rank did when (anomaly start/stop included)
  ctl.jsonl        every c4ctl answer that changed, with its time
  result.json      exit codes, detection latency, events naming ranks
  rank<i>.log      each worker's output

Scenarios: healthy; slow (from --slow-after seconds on, rank --fault-rank
issues each collective later: before each, GPU matmuls costing
--slow-frac of a step over the collectives of a step, or with
--slow-work sleep a host sleep that long, which the GPU hides while it
still runs the previous collective; result.json gives the step slowdown
measured);
hang (that rank stops issuing collectives for --hang-for seconds, then
resumes, so the job ends cleanly).  The network scenarios are 'healthy' runs whose shaping is
done by the calling script (scripts/gpu-e2e).

torch is imported in the worker only, so 'run' starts without CUDA.
"""
import argparse
import json
import os
import socket
import subprocess
import sys
import threading
import time

STOP_EVERY = 5


def now():
    return time.time()


# ---- worker ---------------------------------------------------------------

def worker(a):
    import torch
    import torch.distributed as dist

    tl = open(a.timeline, "a", buffering=1)

    def mark(what, **kw):
        kw.update(rank=a.rank, what=what, t=now())
        tl.write(json.dumps(kw) + "\n")

    gpu = a.gpu if a.gpu >= 0 else a.rank % torch.cuda.device_count()
    torch.cuda.set_device(gpu)
    dev = torch.device("cuda", gpu)
    dist.init_process_group(
        "nccl", init_method="tcp://%s:%d" % (a.master_addr, a.master_port),
        rank=a.rank, world_size=a.world, device_id=dev)
    mark("init", gpu=gpu, nccl=".".join(map(str, torch.cuda.nccl.version())))
    n = int(a.bucket_mb * (1 << 20) / 4)
    bufs = [torch.zeros(n, device=dev) for _ in range(a.buckets)]

    work = None  # the slow rank's GPU work before each collective

    def step(delay=0.0):
        for b in bufs:
            if delay > 0 and work is not None:
                for _ in range(work[1]):
                    torch.mm(work[0], work[0], out=work[2])
            elif delay > 0:
                time.sleep(delay)
            dist.all_reduce(b)
        torch.cuda.synchronize()

    def mm_time(x, y, reps):
        """GPU seconds of one x @ x (CUDA events, after a warm-up).

        A long matmul first keeps the GPU busy while the timed ones are
        queued, so that their launches (host time) are not measured."""
        torch.mm(x, x, out=y)
        big = torch.rand(4096, 4096, device=dev)
        torch.mm(big, big)
        e0 = torch.cuda.Event(enable_timing=True)
        e1 = torch.cuda.Event(enable_timing=True)
        e0.record()
        for _ in range(reps):
            torch.mm(x, x, out=y)
        e1.record()
        e1.synchronize()
        return e0.elapsed_time(e1) / 1e3 / reps

    def gpu_work(target):
        """A square matmul and a count that cost about target GPU seconds.

        A synchronous all_reduce makes the compute stream wait for it, and
        the next one waits for the compute stream: work queued there in
        between delays every collective by its GPU time.  A host sleep
        is hidden while the GPU is still busy with the previous one."""
        n = 128
        while True:
            x = torch.rand(n, n, device=dev)
            y = torch.empty_like(x)
            t = mm_time(x, y, 20)
            # each doubling of n costs 8x: several of a smaller one
            # come closer to the target than one of the next size
            if t >= target / 8 or n >= 8192:
                break
            n *= 2
        return x, max(1, round(target / t)), y, n, t

    for _ in range(3):
        step()
    # Everyone agrees on the step time (the slowest) and the step count.
    t0 = now()
    for _ in range(3):
        step()
    ts = torch.tensor([(now() - t0) / 3], device=dev, dtype=torch.float64)
    dist.all_reduce(ts, op=dist.ReduceOp.MAX)
    t_step = float(ts.item())
    # Rank 0's clock ends the run (steps slow down when a link is shaped):
    # every STOP_EVERY steps a one-element all-reduce carries its verdict.
    t_end = now() + a.duration
    flag = torch.zeros(1, device=dev)
    steps = a.max_steps if a.max_steps > 0 else 1 << 62
    slow = a.scenario == "slow" and a.rank == a.fault_rank
    hang = a.scenario == "hang" and a.rank == a.fault_rank
    delay = a.slow_frac * t_step / len(bufs) if slow else 0.0
    if slow and a.slow_work == "gpu":
        work = gpu_work(delay)
        mark("slow_work", n=work[3], reps=work[1], mm_s=work[4])
    hang_step = int(a.fault_after / max(t_step, 1e-4))
    mark("start", step_s=t_step, bucket_mb=a.bucket_mb,
         buckets=a.buckets)
    # The slow rank starts lagging after slow_after seconds of healthy
    # steps, like a GPU that degrades mid-run (the detectors get a clean
    # history first; a 2-rank communicator has nothing else to compare).
    slow_at = now() + a.slow_after if slow else None
    slow_on = False
    done = 0
    while done < steps:
        if slow_at is not None and not slow_on and now() >= slow_at:
            mark("fault_start", kind="slow", delay_s=delay,
                 work=a.slow_work)
            slow_on = True
        if hang and done == hang_step:
            mark("fault_start", kind="hang", hang_for=a.hang_for)
            time.sleep(a.hang_for)
            mark("fault_end", kind="hang")
        t1 = now()
        step(delay if slow_on else 0.0)
        done += 1
        if done % 20 == 0:
            mark("progress", done=done, last_step_s=now() - t1)
        if done % STOP_EVERY == 0:
            flag.fill_(1.0 if a.rank == 0 and now() >= t_end else 0.0)
            dist.all_reduce(flag, op=dist.ReduceOp.MAX)
            if flag.item() > 0:
                break
    if slow_on:
        mark("fault_end", kind="slow")
    mark("end", steps=done)
    dist.barrier()
    dist.destroy_process_group()
    mark("exit")
    return 0


# ---- launcher ---------------------------------------------------------------

def free_port():
    s = socket.socket()
    s.bind(("127.0.0.1", 0))
    p = s.getsockname()[1]
    s.close()
    return p


class Poller(threading.Thread):
    """Polls c4ctl; keeps every answer that changed (and when)."""

    def __init__(self, ctl, server, token, out):
        super().__init__(daemon=True)
        self.ctl, self.server, self.token = ctl, server, token
        self.out = open(out, "a", buffering=1)
        self.stop = threading.Event()
        self.last = {}
        self.first_open = None
        self.events = []
        self.have_events_cmd = None

    def ask(self, *cmd):
        try:
            p = subprocess.run([self.ctl, "-s", self.server, "-t", self.token,
                                "-w", "2000", "-o", "json"] + list(cmd),
                               capture_output=True, text=True, timeout=5)
        except Exception as e:  # noqa: BLE001
            return 99, str(e)
        return p.returncode, p.stdout.strip() or p.stderr.strip()

    def record(self, name, rc, text):
        key = text
        try:  # a new uptime alone is no news
            doc = json.loads(text)
            if isinstance(doc, dict):
                doc.pop("uptime_ms", None)
                key = json.dumps(doc, sort_keys=True)
        except ValueError:
            pass
        if self.last.get(name) == (rc, key):
            return
        self.last[name] = (rc, key)
        self.out.write(json.dumps({"t": now(), "cmd": name, "rc": rc,
                                   "out": text[:20000]}) + "\n")

    def run(self):
        while not self.stop.is_set():
            rc, text = self.ask("status")
            self.record("status", rc, text)
            if rc == 0:
                try:
                    c = json.loads(text).get("counters", {})
                    if c.get("events_opened", 0) > 0 and \
                            self.first_open is None:
                        self.first_open = now()
                except ValueError:
                    pass
            if self.have_events_cmd is not False:
                rc, text = self.ask("events")
                if rc == 2 and "unknown command" in text:
                    self.have_events_cmd = False
                else:
                    self.have_events_cmd = rc == 0
                    self.record("events", rc, text)
                    if rc == 0:
                        self.note_events(text)
            # the delay matrix (each cell's value, baseline and score)
            rc, text = self.ask("matrix")
            self.record("matrix", rc, text)
            self.stop.wait(0.5)

    def note_events(self, text):
        # c4ctl -o json events prints one event object per line.
        evs = []
        for line in text.splitlines():
            line = line.strip()
            if not line:
                continue
            try:
                doc = json.loads(line)
            except ValueError:
                continue
            if isinstance(doc, dict) and isinstance(doc.get("events"), list):
                evs.extend(doc["events"])
            elif isinstance(doc, list):
                evs.extend(doc)
            elif isinstance(doc, dict):
                evs.append(doc)
        for e in evs:
            key = json.dumps(e, sort_keys=True)
            if all(k != key for _, k in self.events):
                self.events.append((now(), key))


def ranks_named(ev):
    """Ranks an event names among its suspects (schema-tolerant)."""
    found = set()

    def walk(x, in_suspects):
        if isinstance(x, dict):
            for k, v in x.items():
                s = in_suspects or k.lower().startswith("suspect")
                if k == "rank" and s and isinstance(v, int):
                    found.add(v)
                walk(v, s)
        elif isinstance(x, list):
            for v in x:
                walk(v, in_suspects)
    walk(ev, False)
    return found


def launch(a):
    os.makedirs(a.workdir, exist_ok=True)
    port = a.master_port or free_port()
    tl = os.path.join(a.workdir, "timeline.jsonl")
    procs = []
    poll = None
    if a.ctl and a.ctl_server:
        poll = Poller(a.ctl, a.ctl_server, a.ctl_token,
                      os.path.join(a.workdir, "ctl.jsonl"))
        poll.start()
    t_launch = now()
    for r in range(a.nproc):
        cmd = [sys.executable, os.path.abspath(__file__), "worker",
               "--rank", str(r), "--world", str(a.nproc),
               "--master-addr", a.master_addr_fmt.format(rank=0),
               "--master-port", str(port), "--timeline", tl,
               "--scenario", a.scenario, "--fault-rank", str(a.fault_rank),
               "--slow-frac", str(a.slow_frac),
               "--slow-work", a.slow_work, "--hang-for",
               str(a.hang_for), "--fault-after", str(a.fault_after),
               "--slow-after", str(a.slow_after),
               "--duration", str(a.duration), "--max-steps",
               str(a.max_steps), "--bucket-mb",
               str(a.bucket_mb), "--buckets", str(a.buckets),
               "--gpu", str(r)]
        if a.netns:
            # ip may run with its own LD_LIBRARY_PATH; the worker gets ours.
            cmd = [a.ip, "netns", "exec", a.netns + str(r), "env",
                   "LD_LIBRARY_PATH=" + os.environ.get("LD_LIBRARY_PATH",
                                                       "")] + cmd
        env = dict(os.environ, RANK=str(r), LOCAL_RANK=str(r),
                   WORLD_SIZE=str(a.nproc))
        if a.record_rank0 and r == 0:
            env["C4_PROFILER_RECORD"] = a.record_rank0
        if a.record_all:
            env["C4_PROFILER_RECORD"] = a.record_all.replace("{rank}",
                                                             str(r))
        log = open(os.path.join(a.workdir, "rank%d.log" % r), "w")
        procs.append((subprocess.Popen(cmd, env=env, stdout=log,
                                       stderr=subprocess.STDOUT), log))
    deadline = t_launch + a.timeout
    codes = []
    for p, log in procs:
        try:
            codes.append(p.wait(timeout=max(1, deadline - now())))
        except subprocess.TimeoutExpired:
            codes.append("timeout")
    for p, _ in procs:
        if p.poll() is None:
            p.kill()
            p.wait()
    if poll:
        time.sleep(a.linger)
        poll.stop.set()
        poll.join(5)
    res = {"scenario": a.scenario, "nproc": a.nproc, "netns": bool(a.netns),
           "fault_rank": a.fault_rank, "exit": codes,
           "wall_s": round(now() - t_launch, 1)}
    marks = []
    if os.path.exists(tl):
        with open(tl) as f:
            marks = [json.loads(x) for x in f if x.strip()]
    starts = [m for m in marks if m["what"] == "start"]
    if starts:
        res["step_s"] = starts[0].get("step_s")
    ends = [m for m in marks if m["what"] == "end"]
    if ends:
        res["steps"] = ends[0].get("steps")
    fault = [m["t"] for m in marks if m["what"] == "fault_start"]
    t_fault = fault[0] if fault else None
    if a.scenario == "slow" and t_fault is not None:
        # What the lag cost: rank 0's median step after the fault over
        # before it (a second either side left out).
        def med(v):
            v = sorted(v)
            return v[len(v) // 2] if v else None
        pre = med([m["last_step_s"] for m in marks
                   if m["what"] == "progress" and m["rank"] == 0
                   and m["t"] < t_fault - 1])
        post = med([m["last_step_s"] for m in marks
                    if m["what"] == "progress" and m["rank"] == 0
                    and m["t"] > t_fault + 1])
        if pre and post:
            res["slow_work"] = a.slow_work
            res["step_slowdown"] = round(post / pre, 3)
    if poll:
        res["events_cmd"] = poll.have_events_cmd
        if poll.first_open is not None:
            res["first_event_open_s"] = round(
                poll.first_open - (t_fault or t_launch), 2)
            res["first_event_relative_to"] = "fault" if t_fault else "launch"
        named = []
        for t, key in poll.events:
            ev = json.loads(key)
            t_poll = t
            # When the master opened it (its first_seen_ns, this host's
            # clock), not when the poller (every 0.5 s) saw it.
            seen = ev.get("first_seen_ns") if isinstance(ev, dict) else None
            if isinstance(seen, int) and seen > 0:
                t = seen / 1e9
            named.append({"t_rel": round(t - (t_fault or t_launch), 2),
                          "polled_rel": round(
                              t_poll - (t_fault or t_launch), 2),
                          "ranks": sorted(ranks_named(ev)),
                          "kind": ev.get("kind") if isinstance(ev, dict)
                          else None})
        res["events"] = named
        hit = [e for e in named if a.fault_rank in e["ranks"]]
        if a.scenario == "healthy" and not a.expect_fault_rank:
            res["pass"] = (not named and poll.first_open is None) \
                if poll.have_events_cmd is not None else None
        elif poll.have_events_cmd:
            # The acceptance bounds, from the fault: a slow rank within 3
            # intervals, a hang within hang_timeout + 2 s, by an event of
            # the scenario's kind.
            want = {"slow": "noncomm_slow", "hang": "noncomm_hang"}.get(
                a.scenario)
            bound = {"slow": 3 * a.interval_s,
                     "hang": a.hang_timeout_s + 2.0}.get(a.scenario)
            if want:
                hit = [e for e in hit if e["kind"] == want]
            # One opened before the fault is a false event, not a catch.
            early = [e for e in hit if t_fault is not None
                     and e["t_rel"] < 0]
            hit = sorted((e for e in hit if e not in early),
                         key=lambda e: e["t_rel"])
            if early:
                res["before_fault"] = early
            res["pass"] = bool(hit) and not early
            if hit:
                res["first_naming_event_s"] = hit[0]["t_rel"]
            if hit and bound is not None and t_fault is not None:
                res["bound_s"] = bound
                res["in_bound"] = hit[0]["t_rel"] <= bound
                res["pass"] = res["in_bound"] and not early
        else:
            res["pass"] = None  # no events command: judge from the logs
        if any(c != 0 for c in codes):
            res["pass"] = False
    with open(os.path.join(a.workdir, "result.json"), "w") as f:
        json.dump(res, f, indent=1)
    print(json.dumps(res))
    return 0 if all(c == 0 for c in codes) else 1


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("mode", choices=["run", "worker"])
    ap.add_argument("--scenario", default="healthy",
                    choices=["healthy", "slow", "hang"])
    ap.add_argument("--nproc", type=int, default=2)
    ap.add_argument("--rank", type=int, default=0)
    ap.add_argument("--world", type=int, default=1)
    ap.add_argument("--gpu", type=int, default=-1)
    ap.add_argument("--master-addr", default="127.0.0.1")
    ap.add_argument("--master-addr-fmt", default="127.0.0.1",
                    help="rendezvous address; {rank} is rank 0")
    ap.add_argument("--master-port", type=int, default=0)
    ap.add_argument("--timeline", default="timeline.jsonl")
    ap.add_argument("--workdir", default="e2e-out")
    ap.add_argument("--fault-rank", type=int, default=1)
    ap.add_argument("--expect-fault-rank", action="store_true",
                    help="healthy run whose fault is outside (tc)")
    ap.add_argument("--slow-frac", type=float, default=0.2)
    ap.add_argument("--slow-work", default="gpu", choices=["gpu", "sleep"],
                    help="the slow rank's extra work before each "
                    "collective: GPU matmuls, or a host sleep")
    ap.add_argument("--hang-for", type=float, default=10.0)
    ap.add_argument("--interval-s", type=float, default=1.0,
                    help="detection interval, for the slow bound")
    ap.add_argument("--hang-timeout-s", type=float, default=2.0,
                    help="the master's hang_timeout, for the hang bound")
    ap.add_argument("--fault-after", type=float, default=5.0)
    ap.add_argument("--slow-after", type=float, default=8.0,
                    help="seconds of healthy steps before the slow rank lags")
    ap.add_argument("--duration", type=float, default=20.0)
    ap.add_argument("--max-steps", type=int, default=0,
                    help="stop after this many steps (0: by duration)")
    ap.add_argument("--bucket-mb", type=float, default=25.0)
    ap.add_argument("--buckets", type=int, default=4)
    ap.add_argument("--timeout", type=float, default=150.0)
    ap.add_argument("--linger", type=float, default=3.0,
                    help="seconds of polling after the workers end")
    ap.add_argument("--netns", default="",
                    help="namespace prefix: rank i runs in PREFIX<i>")
    ap.add_argument("--ip", default="ip")
    ap.add_argument("--ctl", default="")
    ap.add_argument("--ctl-server", default="")
    ap.add_argument("--ctl-token", default="")
    ap.add_argument("--record-rank0", default="",
                    help="C4_PROFILER_RECORD for rank 0")
    ap.add_argument("--record-all", default="",
                    help="C4_PROFILER_RECORD for every rank; {rank} in "
                    "the path becomes the rank")
    a = ap.parse_args()
    if a.mode == "worker":
        return worker(a)
    return launch(a)


if __name__ == "__main__":
    sys.exit(main())
