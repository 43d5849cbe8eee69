"""bench/torch_validate/table.py OUT: the table of run.sh's reports.

Per (rate, straggler, bucket_cap_mb): the steady step time predicted and
measured (herd validate's "step time" line: the mean step from the second
step on, median over ranks) and its error, and the median |error| of the
bucket rows; then per (rate, straggler) the best bucket size predicted and
measured, and the median and maximum |step error| over all cells."""

import os
import re
import statistics
import sys

STEP = re.compile(r"step time predicted ([\d.]+) s, measured ([\d.]+) s")
# n, predicted, measured, (since session 10: measured p10 - p90,) error
ROW = re.compile(r"^\| all_reduce \| \S+ \| [^|]+ \| bucket \d+ \| (\d+) \| "
                 r"([\d.]+) \| ([\d.]+) \|(?: [\d.]+ - [\d.]+ \|)? "
                 r"([-+\d.]+)%", re.M)


def cells(out):
    for rate in sorted(os.listdir(out), key=lambda r: float(
            re.sub(r"[^\d.]", "", r) or 0) * (1000 if "G" in r else 1)):
        for var in ("plain", "straggler"):
            d = os.path.join(out, rate, var)
            if not os.path.isdir(d):
                continue
            for b in sorted(os.listdir(d), key=lambda s: float(s[1:])):
                rep = os.path.join(d, b, "report.md")
                if not os.path.exists(rep):
                    continue
                text = open(rep).read()
                m = STEP.search(text)
                if not m:
                    continue
                errs = [abs(float(e)) for n, _, _, e in ROW.findall(text)
                        if int(n) > 0]
                yield (rate, var, float(b[1:]), float(m.group(1)),
                       float(m.group(2)),
                       statistics.median(errs) if errs else float("nan"))


def main():
    out = sys.argv[1]
    rows = list(cells(out))
    print("| rate | straggler | bucket_cap_mb | predicted ms | measured ms "
          "| error | bucket rows median abs error |")
    print("|---|---|---:|---:|---:|---:|---:|")
    for rate, var, cap, p, m, be in rows:
        print("| %s | %s | %g | %.0f | %.0f | %+.1f %% | %.1f %% |" % (
            rate, "yes" if var == "straggler" else "no", cap, p * 1e3,
            m * 1e3, (p - m) / m * 100, be))
    print()
    errs = [abs(p - m) / m * 100 for _, _, _, p, m, _ in rows]
    if errs:
        print("cells %d: median |step error| %.1f %%, max %.1f %%" % (
            len(errs), statistics.median(errs), max(errs)))
    groups = {}
    for rate, var, cap, p, m, _ in rows:
        groups.setdefault((rate, var), []).append((cap, p, m))
    for (rate, var), g in groups.items():
        bp = min(g, key=lambda x: x[1])[0]
        bm = min(g, key=lambda x: x[2])[0]
        print("%s %s: best predicted %g, measured %g (%s)" % (
            rate, var, bp, bm, "agree" if bp == bm else "differ"))


if __name__ == "__main__":
    main()
