#!/usr/bin/env python3
"""Writes tests/data/nccl/allreduce-socket-r0.rec: a hand-built recording
in the C4_PROFILER_RECORD format (nccl-profiler/replay.c), until a real
capture from the GPU machine replaces it.

It follows the order NCCL 2.28 is documented to use for a ring all-reduce
over a network (Socket) transport, seen from rank 0 of 2 ranks: the user
thread starts and stops the Coll (stop = enqueued); the proxy thread
starts one ProxyOp per channel and direction (send to and receive from
the ring neighbour, rank 1), the kernel's channels (KernelCh, GPU timer
at start), ProxySteps with their states (send: SendGPUWait, SendPeerWait,
SendWait with transSize; receive: RecvWait, RecvGPUWait), stops the
steps, the ProxyOps (after InProgress) and the KernelCh (KernelChStop
with the GPU timer at stop).

Five all-reduces of 1 MiB (262144 float32), 2 channels, 2 steps of
512 KiB per channel and direction, every 300 ms from t = 1 s; finalize
at 2.5 s.  Per op: Coll enqueue 20 us; kernel 520 us (channel 0 from
G to G+500 us, channel 1 from G+10 us to G+520 us); send step: 10 us
GPU wait, 5 us peer wait, 100 us transfer; receive step: 80 us
RecvWait, 5 us RecvGPUWait.
"""
import sys

COLL, PROXY_OP, PROXY_STEP, KERNEL_CH = 2, 8, 16, 64
SEND_GPU, SEND_WAIT, RECV_WAIT, RECV_GPU, IN_PROGRESS, SEND_PEER, KCH_STOP = \
    8, 9, 10, 12, 19, 20, 22

out = []
handles = iter(range(0x7f0000001000, 0x7f0000100000, 0x40))


def h():
    return "0x%x" % next(handles)


def start(t, ctx, hd, typ, parent="(nil)", seq=0, func=0, algo=0, proto=0,
          count=0, nbytes=0, nch=0, channel=0, peer=0, nsteps=0, chunk=0,
          is_send=0, step=0, ptimer=0):
    out.append("S %d %s %s %d %s 0 %d %d %d %d %d %d %d 0 %d %d %d %d %d %d %d"
               % (t, ctx, hd, typ, parent, seq, func, algo, proto, count,
                  nbytes, nch, channel, peer, nsteps, chunk, is_send, step,
                  ptimer))


ctx = "0x55550000a000"
out.append("# c4-nccl-profiler record 1 (hand-built, see make_fixture.py)")
out.append("I 1000000000 %s c4c4000000000001 1 2 0" % ctx)
US = 1000
for k in range(5):
    T = 1000000000 + k * 300000000 + 1000
    G = 5000000000000 + T
    coll = h()
    start(T, ctx, coll, COLL, seq=k, func=1, algo=1, proto=3, count=262144,
          nbytes=1048576, nch=2)
    out.append("E %d %s" % (T + 20 * US, coll))
    t = T + 30 * US
    for ch in range(2):
        snd, rcv, kch = h(), h(), h()
        start(t, ctx, snd, PROXY_OP, coll, channel=ch, peer=1, nsteps=2,
              chunk=524288, is_send=1)
        start(t, ctx, rcv, PROXY_OP, coll, channel=ch, peer=1, nsteps=2,
              chunk=524288, is_send=0)
        start(t + 10 * US, ctx, kch, KERNEL_CH, coll, channel=ch,
              ptimer=G + ch * 10 * US)
        s = t + 20 * US
        for step in range(2):
            st, rt = h(), h()
            start(s, ctx, st, PROXY_STEP, snd, step=step)
            out.append("R %d %s %d 0 0" % (s, st, SEND_GPU))
            out.append("R %d %s %d 0 0" % (s + 10 * US, st, SEND_PEER))
            out.append("R %d %s %d 524288 0" % (s + 15 * US, st, SEND_WAIT))
            out.append("E %d %s" % (s + 115 * US, st))
            start(s, ctx, rt, PROXY_STEP, rcv, step=step)
            out.append("R %d %s %d 0 0" % (s, rt, RECV_WAIT))
            out.append("R %d %s %d 524288 0" % (s + 80 * US, rt, RECV_GPU))
            out.append("E %d %s" % (s + 85 * US, rt))
            s += 120 * US
        for op in (snd, rcv):
            out.append("R %d %s %d 0 0" % (s, op, IN_PROGRESS))
            out.append("E %d %s" % (s + US, op))
        out.append("R %d %s %d 0 %d" % (s + 2 * US, kch, KCH_STOP,
                                        G + (500 + 20 * ch) * US))
        out.append("E %d %s" % (s + 2 * US, kch))
        t = s + 10 * US
out.append("F 2500000000 %s" % ctx)
sys.stdout.write("\n".join(out) + "\n")
