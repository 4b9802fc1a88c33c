#!/usr/bin/env python3
"""scripts/gpu/rec_conn.py REC [--t0-ns NS] [--bucket-s S]: where a rank's
proxy steps spent their time, per second and per connection.

Reads a C4_PROFILER_RECORD file (format in nccl-profiler/replay.c) and
prints, for every bucket of S seconds (default 1) counted from t0 (default
the first record; give the CLOCK_MONOTONIC time of a fault to line buckets
up with it), per peer and direction: steps, bytes per step, and the median
and mean of each proxy-step state (SendGPUWait, SendPeerWait, SendWait for
sends; RecvWait, RecvGPUWait for receives) in microseconds, plus the
collectives started in the bucket.  A diagnostic for deciding which
signal names a slow connection; not used by the plugin.
"""
import argparse
import statistics
import sys

EV_COLL, EV_OP, EV_STEP = 2, 8, 16
STATES = {8: "gpu", 20: "peer", 9: "send", 10: "recv", 12: "rgpu",
          11: "flush"}
SEND_COLS = ("gpu", "peer", "send")
RECV_COLS = ("recv", "rgpu")


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("rec")
    ap.add_argument("--t0-ns", type=int, default=0)
    ap.add_argument("--bucket-s", type=float, default=1.0)
    a = ap.parse_args()
    ops, steps = {}, {}
    rows = {}    # (bucket, peer, is_send) -> list of (trans, durs)
    colls = {}   # bucket -> count
    t0 = a.t0_ns or None
    width = int(a.bucket_s * 1e9)
    rank = "?"
    with open(a.rec) as f:
        for line in f:
            p = line.split()
            if not p or p[0] == "#":
                continue
            t = int(p[1])
            if t0 is None:
                t0 = t
            b = (t - t0) // width
            if p[0] == "I":
                rank = p[6]
            elif p[0] == "S":
                typ, h, parent = int(p[4]), p[3], p[5]
                if typ == EV_COLL:
                    colls[b] = colls.get(b, 0) + 1
                elif typ == EV_OP and h != "(nil)":
                    ops[h] = (int(p[16]), int(p[19]))
                elif typ == EV_STEP and h != "(nil)" and parent in ops:
                    steps[h] = [ops[parent], t, None, t, {}, 0]
            elif p[0] == "R":
                s = steps.get(p[2])
                if s is None:
                    continue
                if s[2] is not None:
                    s[4][s[2]] = s[4].get(s[2], 0) + t - s[3]
                s[2], s[3] = STATES.get(int(p[3]), "other"), t
                s[5] = max(s[5], int(p[4]))
            elif p[0] == "E":
                s = steps.pop(p[2], None)
                if s is None:
                    ops.pop(p[2], None)
                    continue
                if s[2] is not None:
                    s[4][s[2]] = s[4].get(s[2], 0) + t - s[3]
                (peer, is_send) = s[0]
                rows.setdefault((b, peer, is_send), []).append((s[5], s[4]))
    print("# rank %s, buckets of %.1f s from t0=%d ns; times in us "
          "(median/mean per step)" % (rank, a.bucket_s, t0 or 0))
    for key in sorted(rows):
        b, peer, is_send = key
        v = rows[key]
        cols = SEND_COLS if is_send else RECV_COLS
        out = ["t=%+4d" % b, ("send->%d" if is_send else "recv<-%d") % peer,
               "n=%d" % len(v), "B/step=%d" % statistics.median(
                   [x[0] for x in v]), "colls=%d" % colls.get(b, 0)]
        for c in cols:
            d = [x[1].get(c, 0) / 1e3 for x in v]
            out.append("%s=%.0f/%.0f" % (c, statistics.median(d),
                                         sum(d) / len(d)))
        print(" ".join(out))
    return 0


if __name__ == "__main__":
    sys.exit(main())
