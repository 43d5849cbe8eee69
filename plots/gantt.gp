# plots/gantt.gp - Gantt timeline per rank from a herd timeline TSV:
# compute (grey) against communication (a colour per label, e.g. per DDP
# bucket, as the legend says) and waits (red), one row per rank shown,
# time in milliseconds.
# usage: gnuplot -c gantt.gp TIMELINE.tsv OUT_PREFIX [TITLE] [RANKS]
#   RANKS: the ranks to draw, top to bottom, space separated ("0 1 2 64");
#   default: ranks 0-31. writes OUT_PREFIX.png and OUT_PREFIX.svg
if (ARGC < 2) { print "usage: gnuplot -c gantt.gp TIMELINE.tsv OUT_PREFIX [TITLE] [RANKS]"; exit status 2 }
data = ARG1
out = ARG2
ttl = (ARGC >= 3) ? ARG3 : "herd timeline"

set datafile separator "\t"
set datafile commentschars "#"
stats data skip 2 using 1 nooutput
maxrank = int(STATS_max)
# the rows: ROW[rank + 1] is the rank's row, -1 when it is not drawn
ranks = (ARGC >= 4 && strlen(ARG4) > 0) ? ARG4 : ""
if (ranks eq "") { do for [r=0:(maxrank < 31 ? maxrank : 31)] { ranks = ranks.sprintf(" %d", r) } }
nrows = words(ranks)
array ROW[maxrank + 1]
do for [r=1:maxrank + 1] { ROW[r] = -1 }
do for [i=1:nrows] { r = int(word(ranks, i)); if (r >= 0 && r <= maxrank) { ROW[r + 1] = i - 1 } }
row(rank) = (rank >= 0 && rank <= maxrank && ROW[int(rank) + 1] >= 0) ? ROW[int(rank) + 1] : NaN

# communication colours: one per label in order of first appearance
# (label_id, column 13, numbers every label, compute and marks too), so
# the legend can name each colour's labels; after 8 the colours repeat
array C[8] = [0x1f77b4, 0xff7f0e, 0x2ca02c, 0x9467bd, 0x8c564b, 0xe377c2, 0x17becf, 0xbcbd22]
array CK[64]
array CN[64]
do for [i=1:64] { CK[i] = -1; CN[i] = "" }
ncl = 0
stats data skip 2 using (strcol(5) eq "coll" && CK[int($13) + 1] < 0 ? \
    (CK[int($13) + 1] = ncl, CN[ncl + 1] = strcol(12) eq "-" ? "(no label)" : strcol(12), ncl = ncl + 1) : 0) nooutput
ccol(id) = C[(CK[int(id) + 1] < 0 ? 0 : CK[int(id) + 1]) % 8 + 1]
# legend text of colour k (0-based): its labels, the first three named
legend(k) = (k + 8 < ncl) ? sprintf("%s, %s%s", CN[k + 1], CN[k + 9], \
    k + 16 < ncl ? sprintf(", %s, ... (%d labels)", CN[k + 17], int((ncl - 1 - k) / 8) + 1) : "") : CN[k + 1]

# per row: compute on top, communication below it, waits at the bottom
y(kind, rank) = (kind eq "mark") ? NaN : \
    (kind eq "compute" ? row(rank) - 0.2 : (kind eq "wait" ? row(rank) + 0.3 : row(rank) + 0.08))
h(kind) = (kind eq "wait") ? 0.05 : (kind eq "compute" ? 0.16 : 0.1)

set title ttl noenhanced
set xlabel "time (ms)"
set ylabel "rank"
set yrange [nrows - 0.4:-0.6]
set ytics () nomirror
step = nrows > 32 ? 8 : 1
do for [i=1:nrows:step] { set ytics add (word(ranks, i) i - 1) }
set grid xtics
set key outside right top noenhanced
set style fill solid 0.85 border -1

do for [fmt in "png svg"] {
    if (fmt eq "png") { set terminal pngcairo size 1400,800 noenhanced font ",10"; set output out.".png" }
    if (fmt eq "svg") { set terminal svg size 1400,800 noenhanced font ",10"; set output out.".svg" }
    plot data skip 2 using (($9+$10)/2000):(y(strcol(5), $1)):(($10-$9)/2000):(h(strcol(5))):( \
            strcol(5) eq "compute" ? 0xaaaaaa : (strcol(5) eq "wait" ? 0xd62728 : ccol($13))) \
            with boxxyerror lc rgb variable notitle, \
         NaN with boxes lc rgb 0xaaaaaa title "compute", \
         for [k=0:(ncl < 8 ? ncl : 8) - 1] NaN with boxes lc rgb C[k + 1] title legend(k), \
         NaN with boxes lc rgb 0xd62728 title "wait"
    set output
}
