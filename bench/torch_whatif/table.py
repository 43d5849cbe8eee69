"""Tables for bench/torch_whatif (standard library only).

  table.py measured OUT > measured.tsv
      per (torch, link rate, bucket_cap_mb): the median over the timed steps
      of the step time averaged over ranks (herd's "step time": mean over
      ranks), with each rank's median, from OUT/<rate>/*.steps.json; the
      steps of every round (one run each) are pooled.
  table.py compare MEASURED.tsv RATE SWEEP.tsv
      herd's predicted step time (herd sweep's sweep.tsv) against the
      measured median, error in %, and the best bucket size of each.
"""

import glob
import json
import os
import statistics
import sys


def measured(out):
    print("torch\trate\tbucket_cap_mb\tstep_ms\trank_medians_ms\tmin_ms\t"
          "max_ms\tsteps\tgrad_bytes\tbatch\tthreads")
    rows = {}
    for path in sorted(glob.glob(os.path.join(out, "*", "*.steps.json"))):
        rate = os.path.basename(os.path.dirname(path))
        with open(path) as f:
            d = json.load(f)
        run = os.path.basename(path).rsplit("_rank", 1)[0]
        key = (d["torch"], rate, d["bucket_cap_mb"])
        rows.setdefault(key, {}).setdefault(run, []).append(d)
    for (ver, rate, cap), runs in sorted(rows.items()):
        mean, per_rank = [], {}
        for ds in runs.values():
            n = min(len(d["step_s"]) for d in ds)
            mean += [sum(d["step_s"][i] for d in ds) / len(ds)
                     for i in range(n)]
            for d in ds:
                per_rank.setdefault(d["rank"], []).extend(d["step_s"])
        d0 = next(iter(runs.values()))[0]
        print("%s\t%s\t%g\t%.1f\t%s\t%.1f\t%.1f\t%d\t%d\t%d\t%d" % (
            ver, rate, cap, statistics.median(mean) * 1e3,
            ",".join("%.1f" % (statistics.median(per_rank[r]) * 1e3)
                     for r in sorted(per_rank)),
            min(mean) * 1e3, max(mean) * 1e3, len(mean), d0["grad_bytes"],
            d0["batch"], d0["threads"]))


def _read_tsv(path):
    with open(path) as f:
        head = f.readline().rstrip("\n").split("\t")
        return [dict(zip(head, line.rstrip("\n").split("\t")))
                for line in f if line.strip()]


def compare(measured_tsv, rate, sweep_tsv):
    meas = {float(r["bucket_cap_mb"]): float(r["step_ms"])
            for r in _read_tsv(measured_tsv) if r["rate"] == rate}
    pred = {float(r["ddp.bucket_cap_mb"]): float(r["step_ms"])
            for r in _read_tsv(sweep_tsv)}
    caps = sorted(set(meas) & set(pred))
    print("rate\tbucket_cap_mb\tmeasured_ms\tpredicted_ms\terror_pct")
    worst = 0.0
    for c in caps:
        err = 100.0 * (pred[c] - meas[c]) / meas[c]
        worst = max(worst, abs(err))
        print("%s\t%g\t%.1f\t%.1f\t%+.1f" % (rate, c, meas[c], pred[c], err))
    if caps:
        bm = min(caps, key=lambda c: meas[c])
        bp = min(caps, key=lambda c: pred[c])
        print("# %s: best measured %g MB (%.1f ms), best predicted %g MB; "
              "max |error| %.1f %%" % (rate, bm, meas[bm], bp, worst))


if __name__ == "__main__":
    if len(sys.argv) == 3 and sys.argv[1] == "measured":
        measured(sys.argv[2])
    elif len(sys.argv) == 5 and sys.argv[1] == "compare":
        compare(sys.argv[2], sys.argv[3], sys.argv[4])
    else:
        sys.stderr.write(__doc__)
        sys.exit(2)
