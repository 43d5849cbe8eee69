"""bench/torch_validate/bucket_rows.py SRC OUT: each cell of SRC (a
run.sh output) against OUT (repredict.sh's): the steady step time
predicted and measured, and per (rank, bucket) the median launch-to-end
time of its all_reduce over the steps after the first, predicted and
measured; per cell the median |error| of those rows, over all cells the
median, p95 and maximum."""

import glob
import json
import os
import re
import statistics
import sys

VARIANTS = ("plain", "straggler")
CAPS = ("b1", "b5", "b25", "b100")
STEP = re.compile(r"step time predicted ([\d.]+) s, measured ([\d.]+) s")


def predicted(tsv):
    """(rank, label) -> all_reduce durations (ms) of herd's timeline."""
    rows = {}
    with open(tsv) as f:
        for line in f:
            c = line.rstrip("\n").split("\t")
            if len(c) < 13 or c[4] != "coll" or c[5] != "all_reduce":
                continue
            rows.setdefault((int(c[0]), c[11]), []).append(float(c[10]) / 1e3)
    return rows


def measured(dirname):
    """(rank, label) -> all_reduce durations (ms) of PyTorch's timelines."""
    rows = {}
    for path in sorted(glob.glob(dirname + "/timeline-rank*.json")):
        rank = int(path.split("rank")[-1].split(".")[0])
        with open(path) as f:
            for e in json.load(f)["traceEvents"]:
                if e.get("ph") == "X" and e.get("name") == "all_reduce":
                    key = (rank, e["args"].get("label", ""))
                    rows.setdefault(key, []).append(e["dur"] / 1e3)
    return rows


def steady_step_ms(log):
    """Mean of the replay's steps after the first (its log's line)."""
    with open(log) as f:
        for line in f:
            if line.startswith("steps (from"):
                v = [float(x) for x in line.split(":")[1].split("ms")[0].split()]
                return statistics.mean(v[1:])
    return float("nan")


def bucket_errors(pred, meas):
    """|error| per (rank, bucket), and rank 0's rows for the listing."""
    errs, shown = [], []
    for key in sorted(pred):
        p, m = pred[key][1:], meas.get(key, [])[1:]  # not iteration 0
        n = min(len(p), len(m))
        if n == 0:
            continue
        pm, mm = statistics.median(p[:n]), statistics.median(m[:n])
        e = (pm - mm) / mm * 100
        errs.append(abs(e))
        if key[0] == 0:
            shown.append("%s:%.0f/%.0f(%+.1f%%)" % (key[1], pm, mm, e))
    return errs, shown


def rates_of(src):
    """SRC's rate folders (run.sh's RATE arguments), slowest first."""
    def bps(name):
        m = re.fullmatch(r"([\d.]+)([KMG])bit", name)
        return float(m.group(1)) * {"K": 1e3, "M": 1e6, "G": 1e9}[m.group(2)]
    return sorted((d for d in os.listdir(src)
                   if re.fullmatch(r"[\d.]+[KMG]bit", d)), key=bps)


def main():
    if len(sys.argv) != 3:
        sys.exit("usage: bucket_rows.py SRC OUT (SRC: a run.sh output, "
                 "OUT: repredict.sh's for it)")
    src, out = sys.argv[1], sys.argv[2]
    all_steps, all_buckets = [], []
    for rate in rates_of(src):
        for var in VARIANTS:
            for cap in CAPS:
                o = os.path.join(out, rate, var, cap)
                cell = os.path.join(src, rate, var, cap)
                tsv = os.path.join(o, "predicted", "timeline.tsv")
                if not os.path.exists(tsv):
                    continue
                errs, shown = bucket_errors(
                    predicted(tsv), measured(cell + "/ddp/measured"))
                with open(cell + "/report.md") as f:
                    ms = float(STEP.search(f.read()).group(2)) * 1e3
                ps = steady_step_ms(os.path.join(o, "log"))
                se = (ps - ms) / ms * 100
                all_steps.append(abs(se))
                all_buckets += errs
                print("%-8s %-9s %-5s step %8.1f/%8.1f %+5.1f%%  buckets med "
                      "%5.1f%%  %s" % (rate, var, cap, ps, ms, se,
                                       statistics.median(errs) if errs else 0,
                                       " ".join(shown)))
    if not all_steps:
        sys.exit("no cell of %s predicted in %s" % (src, out))
    b = sorted(all_buckets)
    print("steps: median %.2f%% max %.2f%%; bucket rows: median %.1f%% "
          "p95 %.1f%% max %.1f%%" % (
              statistics.median(all_steps), max(all_steps),
              statistics.median(b), b[int(0.95 * len(b))], b[-1]))


if __name__ == "__main__":
    main()
