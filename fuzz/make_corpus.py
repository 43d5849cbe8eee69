#!/usr/bin/env python3
"""fuzz/make_corpus.py - (re)write the committed seed corpus fuzz/corpus/.

Seeds are the shipped files (scenarios, traces, models, profiler traces
from tests/data) plus the hostile cases of issue 14: YAML alias bombs, NUL
bytes and invalid UTF-8, names that climb out of out/, huge numbers,
impossible timelines, control characters, frames and headers that name
ranks or sizes outside their ranges. Run from anywhere; it replaces the
corpus folders. A timeline seed from a real run is taken from a
`herd sim` output if HERD_TIMELINE=path/timeline.json is given (else the
hand-written ones only)."""
import gzip
import json
import os
import shutil
import struct
import sys

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
OUT = os.path.join(ROOT, "fuzz", "corpus")
MAX = 65536  # scripts/fuzz.sh runs with -max_len=65536


def put(target, name, data):
    d = os.path.join(OUT, target)
    os.makedirs(d, exist_ok=True)
    if isinstance(data, str):
        data = data.encode()
    if len(data) <= MAX:
        with open(os.path.join(d, name), "wb") as f:
            f.write(data)


def copy(target, path, name=None):
    with open(os.path.join(ROOT, path), "rb") as f:
        put(target, name or os.path.basename(path), f.read())


def alias_bomb(levels):
    s = "name: bomb\nl0: &l0 [x, x, x, x, x, x, x, x, x]\n"
    for i in range(1, levels):
        s += "l%d: &l%d [%s]\n" % (i, i, ", ".join(["*l%d" % (i - 1)] * 9))
    return s


def scenarios():
    for d in ("scenarios", "scenarios/ddp"):
        p = os.path.join(ROOT, d)
        if os.path.isdir(p):
            for f in sorted(os.listdir(p)):
                if f.endswith((".yaml", ".yml")):
                    copy("scenario", os.path.join(d, f),
                         d.replace("/", "_") + "_" + f)
    base = "cluster: {nodes: 1, gpus_per_node: 2}\n"
    put("scenario", "hostile_bomb9.yaml", alias_bomb(9))
    put("scenario", "hostile_merge.yaml",
        "a: &a {nodes: 2}\ncluster:\n  <<: *a\n  gpus_per_node: 2\n")
    put("scenario", "hostile_nul.yaml",
        b"name: x\ncluster:\n  nodes: 2\0\ncluster: 3\nbogus: 1\n")
    put("scenario", "hostile_utf8.yaml", b"name: caf\xc3\xa9\xff\n" + base.encode())
    put("scenario", "hostile_traversal.yaml", "name: ../../elsewhere/x\n" + base)
    put("scenario", "hostile_escape.yaml",
        '"\\e]0;title\\a\\e[2J": 1\nname: "\\e[31mred"\n' + base)
    put("scenario", "hostile_shards.yaml",
        base + "workload:\n  ddp:\n    model: gpt2_small\n"
        "    shards: true\n    shard_sizes: [128, 4294967296]\n")
    put("scenario", "hostile_huge.yaml",
        "cluster: {nodes: 65536, gpus_per_node: 16}\n"
        "workload:\n  sweep: {min: 1B, max: 8TB, factor: 1.0001}\n")
    put("scenario", "hostile_ddp_flow.yaml",
        base + "workload:\n  ddp: {model: [], bucket_cap_mb: {}}\n")
    put("scenario", "hostile_deep.yaml", "a: " + "[" * 200 + "]" * 200 + "\n")


def traces():
    for f in ("scenarios/traces/mismatch.json", "scenarios/traces/dp-steps.json"):
        if os.path.exists(os.path.join(ROOT, f)):
            copy("trace_json", f)
    put("trace_json", "hostile_top_array.json", "[1, 2]")
    put("trace_json", "hostile_escape_key.json",
        '{"format": "herd-trace", "version": 1, "world_size": 2, "ops": [],'
        ' "\\u001b]0;x\\u0007\\u001b[2J": 1}')
    put("trace_json", "hostile_counts.json", json.dumps({
        "format": "herd-trace", "version": 1, "world_size": 1048576,
        "groups": [[0, 1048575]],
        "ops": [{"op": "all_reduce", "count": 2 ** 50, "dtype": "float64"},
                {"op": "compute", "dur_ns": 2 ** 60},
                {"op": "send", "peer": "+1", "bytes": 8, "async": "a"},
                {"op": "wait", "async": "a"}],
        "rank_ops": {"3": [{"op": "recv", "peer": 2, "count": 1}]}}))


def models():
    for f in ("models/gpt2_small.json", "models/resnet50.json",
              "tests/data/ddp/models/resnet18.json"):
        if os.path.exists(os.path.join(ROOT, f)):
            copy("model_json", f, f.replace("/", "_"))
    put("model_json", "hostile_tiny.json", json.dumps({
        "model": "tiny", "params": [{"name": "w", "shape": [2 ** 40, 2 ** 40]}],
        "layers": []}))
    put("model_json", "hostile_array.json", "[]")


def timelines():
    tl = os.environ.get("HERD_TIMELINE")
    if tl and os.path.exists(tl):
        with open(tl, "rb") as f:
            put("timeline", "sim_run.json", f.read())
    ok = {"ph": "X", "cat": "coll", "name": "all_reduce", "ts": 2.0,
          "dur": 3.5, "pid": 0, "tid": 1,
          "args": {"bytes": 1024, "count": 256, "dtype": "float32",
                   "op": "sum", "algorithm": "ring", "peer": -1, "seq": 1,
                   "group": 0, "start_ns": 2000, "end_ns": 5500}}
    comp = {"ph": "X", "cat": "compute", "name": "fwd", "ts": 0, "dur": 2,
            "pid": 0, "tid": 0, "args": {"label": "fwd"}}
    mark = {"ph": "i", "cat": "mark", "name": "step", "s": "t", "ts": 6,
            "pid": 0, "tid": 0}
    meta = {"name": "thread_name", "ph": "M", "pid": 0, "tid": 1,
            "args": {"name": "rank 1"}}
    doc = {"displayTimeUnit": "ns",
           "otherData": {"format": "herd-timeline", "version": 1,
                         "engine": "sim"},
           "traceEvents": [meta, comp, ok, mark]}
    put("timeline", "small.json", json.dumps(doc))
    bad = [("end_before_start", {"start_ns": 10, "end_ns": 9}),
           ("huge", {"start_ns": 0, "end_ns": 2 ** 63 - 1})]
    for name, args in bad:
        e = dict(ok, args=dict(ok["args"], **args))
        put("timeline", "hostile_%s.json" % name,
            json.dumps(dict(doc, traceEvents=[e])))
    put("timeline", "hostile_negative.json",
        json.dumps([dict(comp, ts=-5, dur=-1)]))


def flights():
    def dump(rank, world, entries):
        return json.dumps({
            "version": 1, "engine": "tcp", "rank": rank, "world_size": world,
            "dump_time_ns": 1000, "groups": [{"id": 0, "ranks": list(range(min(world, 4)))}],
            "entries": entries})

    def entry(seq, coll="all_reduce", count=256, state="completed"):
        return {"id": seq, "group": 0, "seq": seq, "coll": coll,
                "algo": "ring", "dtype": "float32", "op": "sum", "root": -1,
                "count": count, "in_bytes": count * 4,
                "out_bytes": count * 4, "state": state, "status": "HERD_OK",
                "t_scheduled_ns": 1, "t_started_ns": 2, "t_completed_ns": 3}

    r0 = dump(0, 2, [entry(1), entry(2, state="started")])
    r1 = dump(1, 2, [entry(1), entry(2, coll="broadcast", count=128)])
    put("flight", "two_ranks_mismatch.json", r0 + "\0" + r1)
    put("flight", "one_rank.json", dump(0, 3, [entry(1)]))
    put("flight", "hostile_world.json", dump(0, 65536, [entry(1)]))
    # PyTorch Flight Recorder dumps (trace/frdump.c), two ranks each
    base = os.path.join(ROOT, "tests", "data", "flight")
    if os.path.isdir(base):
        for d in sorted(os.listdir(base)):
            ranks = []
            for r in range(2):
                f = os.path.join(base, d, "rank%d.json" % r)
                if os.path.exists(f):
                    with open(f, "rb") as fh:
                        ranks.append(fh.read())
            if ranks:
                put("flight", "pytorch_%s.json" % d, b"\0".join(ranks))


def le_bytes(b):
    return struct.pack("<q", len(b)) + b


def frame(op, body=b""):
    payload = bytes([op]) + body
    return struct.pack("<I", len(payload)) + payload


def store():
    q = struct.pack("<q", 1000)
    seeds = {
        "auth": frame(1, le_bytes(b"secret-token")),
        "set_get": frame(2, le_bytes(b"key") + le_bytes(b"value"))
        + frame(3, le_bytes(b"key") + q),
        "add_cas": frame(4, le_bytes(b"n") + struct.pack("<q", 3))
        + frame(5, le_bytes(b"k") + le_bytes(b"a") + le_bytes(b"b")),
        "wait_check": frame(6, struct.pack("<q", 2) + le_bytes(b"a")
                            + le_bytes(b"b") + q)
        + frame(7, struct.pack("<q", 1) + le_bytes(b"a")),
        "delete_num": frame(8, le_bytes(b"k")) + frame(9),
        "hostile_len": struct.pack("<I", 0xffffffff) + b"\2",
        "hostile_keylen": frame(2, struct.pack("<q", 2 ** 62) + b"x"),
        "hostile_nkeys": frame(6, struct.pack("<q", 2 ** 40) + le_bytes(b"a")),
        "hostile_partial": struct.pack("<I", 64 << 20) + b"\2" * 16,
    }
    for k, v in seeds.items():
        put("store_frame", k, v)


def store_tcps():
    # PyTorch TCPStore commands (after the hello), as torch >= 2 sends them
    def n(k):
        return struct.pack("<Q", k)

    seeds = {
        "set_get": b"\1" + le_bytes(b"/kk") + le_bytes(b"vv")
        + b"\3" + le_bytes(b"/kk"),
        "cas_add": b"\2" + le_bytes(b"/c") + le_bytes(b"") + le_bytes(b"x")
        + b"\4" + le_bytes(b"/n") + struct.pack("<q", 5),
        "wait_check": b"\6" + n(2) + le_bytes(b"/a") + le_bytes(b"/b")
        + b"\5" + n(1) + le_bytes(b"/a"),
        "multi": b"\x0b" + n(2) + le_bytes(b"/a") + le_bytes(b"1")
        + le_bytes(b"/b") + le_bytes(b"2")
        + b"\x0a" + n(2) + le_bytes(b"/a") + le_bytes(b"/b"),
        "misc": b"\x0d" + struct.pack("<I", 0x543a) + b"\7" + b"\x08"
        + le_bytes(b"/a") + b"\x09" + le_bytes(b"/a") + le_bytes(b"+")
        + b"\x0c" + b"\0" + struct.pack("<I", 0x3C85F7CE),
        "hostile_keylen": b"\3" + n(2 ** 62) + b"x",
        "hostile_nkeys": b"\6" + n(2 ** 40) + le_bytes(b"a"),
    }
    for k, v in seeds.items():
        put("store_tcps", k, v)


def tcp():
    # byte 0: world size - 1; byte 1: 0 = message header, 1 = handshake
    def hdr(typ, group=0, tag=0, seq=1, length=64, magic=0x31445248):
        return b"\x00" + struct.pack("<IHHiiQQQ", magic, typ, 0, group, tag,
                                      seq, length, 0)

    def hs(rank, cookie=b"herd-fuzz-cookie", magic=0x32534448):
        return b"\x01" + struct.pack("<II", magic, rank) + cookie

    seeds = {
        "coll": b"\x03" + hdr(1),
        "p2p": b"\x03" + hdr(2, tag=7),
        "bye": b"\x03" + hdr(3, length=0),
        "abort": b"\x03" + hdr(4, tag=1, length=0),
        "handshake": b"\x03" + hs(2),
        "hostile_abort_rank77": b"\x02" + hdr(4, tag=77, length=0),
        "hostile_len": b"\x03" + hdr(1, length=2 ** 63),
        "hostile_magic": b"\x03" + hdr(1, magic=0xdeadbeef),
        "hostile_handshake_cookie": b"\x03" + hs(1, cookie=b"x" * 16),
        "hostile_handshake_rank": b"\x03" + hs(2 ** 31),
    }
    for k, v in seeds.items():
        put("tcp_hdr", k, v)


def kineto():
    d = "tests/data/kineto"
    for f in ("small_cnn.json", "nccl_synth_rank0.json",
              "torch113_b25_rank0.json.gz"):
        if os.path.exists(os.path.join(ROOT, d, f)):
            copy("kineto", os.path.join(d, f))
    put("kineto", "hostile_empty.json", '{"traceEvents": []}')
    put("kineto", "hostile_gzip_zeros.gz", gzip.compress(b" " * (8 << 20), mtime=0))


def uncertainty():
    put("uncertainty", "points.tsv",
        "rate\tpredicted_ms\tmeasured_ms\tcollective\talgorithm\tbytes\n"
        "200Mbit\t66.367914\t65.880710\tall_reduce\tring\t1048576\n"
        "200Mbit\t263.674710\t274.421368\tall_reduce\tring\t4194304\n")
    put("uncertainty", "compare.tsv",
        "all_reduce\tpred_us\tmeas_us\nall_reduce\t66367.914\t66506.860\n")
    put("uncertainty", "hostile_numbers.tsv",
        "predicted_ms\tmeasured_ms\nnan\t1\n1\t0\n-1\t1e400\n1\t\n")
    put("uncertainty", "hostile_long.tsv",
        "predicted_ms\tmeasured_ms\n" + "1" * 5000 + "\t1\n")
    put("uncertainty", "hostile_header.tsv", "\t\t\t\n#\n\n")


def steps():
    head = ("rank\tgroup\tseq\tcoll\talgo\top_bytes\top_start_ns\tstep\tkind"
            "\tpeer\tchannel\tbytes\tstart_ns\tend_ns\n")
    rows = []
    for r in range(4):  # a ring all_reduce's first steps, 4 ranks
        rows.append("%d\t0\t1\tall_reduce\tring\t16000\t0\t0\tsend\t%d\t0"
                    "\t4000\t0\t40\n" % (r, (r + 1) % 4))
        rows.append("%d\t0\t1\tall_reduce\tring\t16000\t0\t1\trecv_reduce"
                    "\t%d\t0\t4000\t0\t5400\n" % (r, (r + 3) % 4))
    put("steps", "ring.tsv", head + "".join(rows))
    put("steps", "header_only.tsv", head)
    put("steps", "hostile_numbers.tsv", head +
        "2147483648\t0\t18446744073709551616\tall_reduce\tring\t1\t0\t"
        "4294967296\tsend\t-2\t0\t1\t9\t5\n")
    put("steps", "hostile_fields.tsv", head + "0\t0\t1\tbarrier\n\t\t\t\n" +
        "0\t0\t1\tall_reduce\tring\t16\t0\t0\tsend\t1\t0\t4\t5\t9\t\t\n")
    put("steps", "hostile_long.tsv", head + "7" * 5000 + "\n")
    put("steps", "hostile_header.tsv", "rank\tstep\n" + "".join(rows))


def main():
    if os.path.isdir(OUT):
        shutil.rmtree(OUT)
    for fn in (scenarios, traces, models, timelines, flights, store,
               store_tcps, tcp, kineto, uncertainty, steps):
        fn()
    for t in sorted(os.listdir(OUT)):
        print("%-12s %d seeds" % (t, len(os.listdir(os.path.join(OUT, t)))))


if __name__ == "__main__":
    sys.exit(main())
