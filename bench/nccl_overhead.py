#!/usr/bin/env python3
"""bench/run nccl-overhead: what the c4 profiler plugin costs NCCL.

All-reduce latency and bus bandwidth at 8 KB, 1 MB, 64 MB and 1 GB,
without and with NCCL_PROFILER_PLUGIN, in the same run: ROUNDS rounds,
each spawning one fresh set of worker processes (one per GPU) per
configuration, alternating off/on so that drift hits both alike.  The
median over rounds is reported.  stdout carries only
'metric <name> <value> <unit>' lines; progress goes to stderr.

Each worker times two loops of back-to-back all-reduces:
  nccl_allreduce_*   ncclAllReduce called directly (through ctypes, on
                     the libnccl that PyTorch loaded), as nccl-tests'
                     all_reduce_perf does: what NCCL itself delivers;
  torch_allreduce_*  torch.distributed.all_reduce: what a PyTorch job
                     sees.  Below about 1 MB this loop is bound by
                     Python's cost per call (about 20 us), so any host
                     time the plugin adds shows in full.

The plugin runs as in production (Coll, KernelCh, ProxyOp, ProxyStep on,
C4_JOB_ID set) but with no agent behind C4_AGENT_SOCKET unless one is
given: everything is measured and summarised; only the socket write,
on the client library's own thread, is missing.

Environment: C4_NCCL_PLUGIN (default build-gpu/, then build-bench/),
C4_BENCH_ROUNDS (3), C4_BENCH_NPROC (all GPUs), C4_AGENT_SOCKET,
C4_BENCH_LOOPS ("nccl torch"),
C4_BENCH_EVENTS: further plugin configurations to time in the same
rounds, each a C4_PROFILER_EVENTS list ("none coll coll,kernel") or
"sample=N" (the default events with C4_PROFILER_KERNEL_SAMPLE=N); their
figures come as ..._on_<list>_... metrics (commas become '+', '=' goes),
so that the cost of each kind of event can be told apart.
Targets (docs/nccl.md): <= 1 % bus bandwidth lost at >= 1 MB,
<= 2 us added latency at 8 KB.
"""
import ctypes
import json
import os
import socket
import subprocess
import sys
import tempfile

# (bytes, name, all-reduces per timed loop); each size is timed REPS
# times in a row and the median loop counts, so one loop caught at a
# clock or protocol change does not decide a round.
REPS = 5
SIZES = [(8 << 10, "8KB", 2000), (1 << 20, "1MB", 2000),
         (64 << 20, "64MB", 40), (1 << 30, "1GB", 8)]


def log(*a):
    print(*a, file=sys.stderr, flush=True)


def load_nccl():
    """The libnccl this process already runs (PyTorch's), else the
    system's."""
    path = None
    with open("/proc/self/maps") as f:
        for line in f:
            f5 = line.split()
            if len(f5) >= 6 and "/libnccl.so" in f5[5]:
                path = f5[5]
                break
    lib = ctypes.CDLL(path or "libnccl.so.2")
    p, i = ctypes.c_void_p, ctypes.c_int
    lib.ncclGetUniqueId.argtypes = [p]
    lib.ncclCommInitRank.argtypes = [p, i, NcclUniqueId, i]
    lib.ncclAllReduce.argtypes = [p, p, ctypes.c_size_t, i, i, p, p]
    lib.ncclCommDestroy.argtypes = [p]
    for fn in (lib.ncclGetUniqueId, lib.ncclCommInitRank, lib.ncclAllReduce,
               lib.ncclCommDestroy, lib.ncclGetVersion):
        fn.restype = i
    return lib, path or "libnccl.so.2"


class NcclUniqueId(ctypes.Structure):
    _fields_ = [("internal", ctypes.c_uint8 * 128)]


NCCL_FLOAT32, NCCL_SUM = 7, 0


def nccl_check(rc, what):
    if rc != 0:
        raise RuntimeError("%s: ncclResult %d" % (what, rc))


def time_loops(torch, dist, dev, world, run_ops):
    """run_ops(nbytes, x, iters) issues iters all-reduces of x on the
    current stream; returns {size: {lat_us, busbw_gbs}}, each the median
    of REPS timed loops of the slowest rank."""
    res = {}
    for nbytes, name, iters in SIZES:
        x = torch.zeros(nbytes // 4, device=dev)
        run_ops(x, max(5, iters // 10))
        ts = []
        for _ in range(REPS):
            torch.cuda.synchronize()
            dist.barrier()
            b, e = torch.cuda.Event(enable_timing=True), \
                torch.cuda.Event(enable_timing=True)
            b.record()
            run_ops(x, iters)
            e.record()
            torch.cuda.synchronize()
            t = b.elapsed_time(e) / 1000.0 / iters  # s per op
            tt = torch.tensor([t], device=dev, dtype=torch.float64)
            dist.all_reduce(tt, op=dist.ReduceOp.MAX)
            ts.append(float(tt.item()))
        t = sorted(ts)[len(ts) // 2]
        res[name] = {"lat_us": t * 1e6,
                     "busbw_gbs": nbytes / t * 2 * (world - 1) / world / 1e9}
        del x
    return res


def worker(rank, world, port, out, loops):
    import torch
    import torch.distributed as dist

    torch.cuda.set_device(rank)
    dev = torch.device("cuda", rank)
    store = dist.TCPStore("127.0.0.1", port, world, rank == 0)
    dist.init_process_group("nccl", store=store, rank=rank, world_size=world,
                            device_id=dev)
    res = {}
    if "torch" in loops:
        def torch_ops(x, n):
            for _ in range(n):
                dist.all_reduce(x)
        res["torch"] = time_loops(torch, dist, dev, world, torch_ops)
    if "nccl" in loops:
        lib, path = load_nccl()
        uid = NcclUniqueId()
        if rank == 0:
            nccl_check(lib.ncclGetUniqueId(ctypes.byref(uid)),
                       "ncclGetUniqueId")
            store.set("c4-bench-nccl-id", bytes(uid.internal))
        else:
            ctypes.memmove(ctypes.addressof(uid),
                           store.get("c4-bench-nccl-id"), 128)
        comm = ctypes.c_void_p()
        nccl_check(lib.ncclCommInitRank(ctypes.byref(comm), world, uid, rank),
                   "ncclCommInitRank")
        stream = ctypes.c_void_p(torch.cuda.current_stream().cuda_stream)
        ar = lib.ncclAllReduce

        def nccl_ops(x, n):
            p, cnt = x.data_ptr(), x.numel()
            for _ in range(n):
                if ar(p, p, cnt, NCCL_FLOAT32, NCCL_SUM, comm, stream):
                    raise RuntimeError("ncclAllReduce failed")
        res["nccl"] = time_loops(torch, dist, dev, world, nccl_ops)
        if rank == 0:
            v = ctypes.c_int()
            lib.ncclGetVersion(ctypes.byref(v))
            res["nccl_lib"] = "%s (%d)" % (path, v.value)
        torch.cuda.synchronize()
        lib.ncclCommDestroy(comm)
    if rank == 0:
        with open(out, "w") as f:
            json.dump(res, f)
    dist.destroy_process_group()


def free_port():
    s = socket.socket()
    s.bind(("127.0.0.1", 0))
    p = s.getsockname()[1]
    s.close()
    return p


def run_config(nproc, plugin, tmp, tag, loops, events=None):
    out = os.path.join(tmp, tag + ".json")
    env = dict(os.environ)
    for k in ("NCCL_PROFILER_PLUGIN", "C4_PROFILER_RECORD",
              "C4_PROFILER_EVENTS", "C4_PROFILER_KERNEL_SAMPLE"):
        env.pop(k, None)
    if events and events.startswith("sample="):
        env["C4_PROFILER_KERNEL_SAMPLE"] = events.split("=", 1)[1]
    elif events:
        env["C4_PROFILER_EVENTS"] = events
    if plugin:
        env["NCCL_PROFILER_PLUGIN"] = plugin
        env.setdefault("C4_JOB_ID", "bench")
        env.setdefault("C4_AGENT_SOCKET", os.path.join(tmp, "no-agent.sock"))
        lib = os.environ.get("C4PLUGLIB")
        if lib:
            env["LD_LIBRARY_PATH"] = lib + ":" + env.get("LD_LIBRARY_PATH", "")
    port = free_port()
    ps = [subprocess.Popen([sys.executable, os.path.abspath(__file__),
                            "worker", str(r), str(nproc), str(port), out,
                            ",".join(loops)],
                           env=env, stdout=sys.stderr, stderr=sys.stderr)
          for r in range(nproc)]
    codes = [p.wait(timeout=600) for p in ps]
    if any(codes) or not os.path.exists(out):
        raise RuntimeError("%s: workers exited %s" % (tag, codes))
    with open(out) as f:
        return json.load(f)


def median(v):
    v = sorted(v)
    return v[len(v) // 2] if len(v) % 2 else (v[len(v) // 2 - 1] +
                                              v[len(v) // 2]) / 2


def main():
    if len(sys.argv) > 1 and sys.argv[1] == "worker":
        worker(int(sys.argv[2]), int(sys.argv[3]), int(sys.argv[4]),
               sys.argv[5], sys.argv[6].split(","))
        return 0
    try:
        import torch
        ngpu = torch.cuda.device_count()
    except Exception:  # noqa: BLE001
        ngpu = 0
    if ngpu < 1:
        log("nccl-overhead: no GPU here; skipped")
        return 0
    top = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
    plugin = os.environ.get("C4_NCCL_PLUGIN")
    for cand in ("build-gpu", "build-bench", "build"):
        p = os.path.join(top, cand, "nccl-profiler",
                         "libnccl-profiler-c4.so")
        if not plugin and os.path.exists(p):
            plugin = p
    if not plugin:
        log("nccl-overhead: no libnccl-profiler-c4.so (scripts/gpu-e2e "
            "OUT --build-only builds one)")
        return 1
    nproc = int(os.environ.get("C4_BENCH_NPROC", ngpu))
    rounds = int(os.environ.get("C4_BENCH_ROUNDS", "3"))
    log("nccl-overhead: %d GPUs, %d rounds, plugin %s" % (nproc, rounds,
                                                          plugin))
    extra = os.environ.get("C4_BENCH_EVENTS", "").split()
    cfgs = ["off", "on"] + ["on_" + e.replace(",", "+").replace("=", "")
                            for e in extra]
    events = dict(zip(cfgs[2:], extra))
    loops = os.environ.get("C4_BENCH_LOOPS", "nccl torch").split()
    if not loops or any(lp not in ("nccl", "torch") for lp in loops):
        log("nccl-overhead: C4_BENCH_LOOPS takes nccl and/or torch")
        return 1
    res = {c: [] for c in cfgs}
    with tempfile.TemporaryDirectory() as tmp:
        for r in range(rounds):
            # Each round turns the order around, so drift hits all alike.
            order = cfgs if r % 2 == 0 else cfgs[::-1]
            for cfg in order:
                res[cfg].append(run_config(nproc, plugin if cfg != "off"
                                           else None, tmp, "%s%d" % (cfg, r),
                                           loops, events.get(cfg)))
                log("round %d %s: %s" % (r, cfg, json.dumps(res[cfg][-1])))
    if "nccl_lib" in res["off"][0]:
        log("nccl-overhead: direct loop on %s" % res["off"][0]["nccl_lib"])
    print("metric nccl_overhead_gpus %d count" % nproc)
    for lp in loops:
        for _, name, _ in SIZES:
            lat = {c: median([x[lp][name]["lat_us"] for x in res[c]])
                   for c in res}
            bw = {c: median([x[lp][name]["busbw_gbs"] for x in res[c]])
                  for c in res}
            m = "%s_allreduce_%s" % (lp, name)
            print("metric %s_lat_off %.2f us" % (m, lat["off"]))
            print("metric %s_busbw_off %.2f GB/s" % (m, bw["off"]))
            for c in cfgs[1:]:
                print("metric %s_lat_%s %.2f us" % (m, c, lat[c]))
                print("metric %s_lat_added%s %.2f us"
                      % (m, c[2:], lat[c] - lat["off"]))
                print("metric %s_busbw_%s %.2f GB/s" % (m, c, bw[c]))
                print("metric %s_busbw_loss%s %.2f %%"
                      % (m, c[2:], (bw["off"] - bw[c]) / bw["off"] * 100
                         if bw["off"] > 0 else 0.0))
    sys.stdout.flush()
    return 0


if __name__ == "__main__":
    sys.exit(main())
